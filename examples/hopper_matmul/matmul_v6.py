# What changed from V5:
# - The grid is one block per SM, and each block walks output tiles
#   blockIdx.x, blockIdx.x + gridDim.x, ... in the V4 raster order. In V5 a block
#   ended with its tile: its epilogue left the tensor cores idle, and the next
#   block started with an empty pipeline. Now the producer warp runs straight on
#   into the next tile's K-tiles while the consumers finish the current one.
# - C leaves through shared memory: each consumer warp group writes its fp16 rows
#   to a staging buffer and one warp hands the buffer to TMA (shared_to_global),
#   then goes back to MMAs at once; the store drains while the next tile is
#   computed. The buffer is refilled only once TMA has finished reading it.
# - The staging buffer (64 KB) takes the shared memory of a fourth stage: 3 stages.
# - Raster groups (swizzle_size) of 16 tile rows, fixed: in the site's step-by-step timings (docs/steps.rst),
#   the change after the persistent loop that measurably helped.
# - Where C's rows do not start on 16-byte boundaries (N % 8 != 0), TMA cannot store them: the group's threads
#   copy the staged rows out themselves (end of the tile loop).

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.utils import cdiv

import common
from pipeline import Pipeline
from raster import TileRaster

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "a persistent kernel"

CONSUMERS = 2  # consumer warp groups: threads [0, 256)
PRODUCER = CONSUMERS * 128  # first thread of the producer warp: threads [256, 288)


# Asked once, here: Tilus builds configurations in forked workers, which must not touch CUDA.
NUM_SMS = common.sm_count()


# The configuration this chapter measured: the tile, K-tile and stages from the autotune lists below at 8192³ on
# the H200, the raster groups from the step-by-step timings (below). The benchmark, the GPU tests and the pages
# pin it, so every process builds this one kernel.
TUNED = {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 16}


# Output tile per block; each consumer warp group takes block_m / 2 rows.
@tilus.autotune("block_m, block_n", [[128, 256], [256, 128]])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [64])
# 3 stages of 48 KB plus the 64 KB staging buffer for C: 208 of the 227 KB one block may use.
@tilus.autotune("num_stages", [3])
# Tile rows per raster group. In the step-by-step timings (interleaved, under sustained load) 16 beat row-major
# order (1): fewer panels cross HBM per wave. The autotuner's short timings had preferred 1, so it is fixed.
@tilus.autotune("swizzle_size", [16])
class MatmulV6(tilus.Script):
    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int, swizzle_size: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.num_stages, self.swizzle_size = num_stages, swizzle_size
        self.group_m = block_m // CONSUMERS  # rows of the tile per consumer warp group
        self.num_sms = NUM_SMS

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        # One block per SM, each looping over tiles; blocks left without a tile just exit.
        self.attrs.blocks = self.num_sms
        # Warps 0-7: two consumer warp groups; warp 8: the producer.
        self.attrs.warps = CONSUMERS * 4 + 1
        raster = TileRaster(cdiv(m_size, bm), cdiv(n_size, bn), self.swizzle_size)

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros, writes are clipped.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for both.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, CONSUMERS, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # Staging buffer for C: each consumer warp group's rows, on their way to TMA. Plain rows, so that
        # one TMA box (up to 256 x 256 elements) covers a group's group_m x block_n rows.
        sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, gm, bn])
        self.annotate_layout(sc, self.cuda.shared_layout([CONSUMERS, gm, bn]))
        # Full/empty barriers per stage; stage indices and phases carry on from one tile to the next.
        pipe = Pipeline(self.num_stages, num_consumers=CONSUMERS)

        # Producer warp: walks the same tiles, refilling each stage as soon as it is freed, across tile boundaries.
        with self.thread_group(thread_begin=PRODUCER, num_threads=32):
            for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
                tile_m, tile_n = raster.tile_of(tile)
                offset_m: int32 = bm * tile_m
                offset_n: int32 = bn * tile_n
                for offset_k in range(0, k_size, bk):
                    # Wait for a free stage and arm its full barrier with the bytes TMA will bring.
                    stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                    # Two A slabs and the shared B tile; TMA completes full[stage] when all three have landed.
                    full = pipe.full[stage]
                    self.tma.global_to_shared(src=ga, dst=sa[stage, 0], offsets=[offset_m, offset_k], mbarrier=full)
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, 1], offsets=[offset_m + gm, offset_k], mbarrier=full
                    )
                    self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[offset_n, offset_k], mbarrier=full)

        # TMA needs 16-byte global row strides: with N % 8 != 0 the consumers copy C out themselves (epilogue).
        # Consumer warp groups: the same code, each on its own rows.
        self.consumer(0, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)

    def consumer(
        self,
        group: int,
        pipe: Pipeline,
        raster: TileRaster,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        gc: GlobalTensor,
        k_size: int,
        tma_store: bool,
    ):
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
                tile_m, tile_n = raster.tile_of(tile)
                # This group's fp32 accumulator (group_m x block_n), zeroed for every tile.
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
                for k_tile in range(cdiv(k_size, self.block_k)):
                    # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
                    stage = pipe.consumer_acquire()
                    # Order earlier register accesses to acc (its zeroing for this tile, the previous tile's
                    self.wgmma.fence()  # epilogue reads) before the async MMA reads and writes acc
                    self.wgmma.mma(sa[stage, group], sb[stage].transpose(), acc)  # own A slab x shared B tile
                    self.wgmma.commit_group()
                    # Keep this K-tile's MMA in flight; only the previous K-tile's must have retired...
                    self.wgmma.wait_group(1)
                    if k_tile > 0:
                        pipe.consumer_release()  # ...so its stage (the oldest held) goes back to the producer
                # Drain the last MMA before reading acc, and release its stage.
                self.wgmma.wait_group(0)
                pipe.consumer_release()

                offsets = [self.block_m * tile_m + group * self.group_m, self.block_n * tile_n]
                if tma_store:
                    # Epilogue: the previous tile's TMA store must have finished reading the staging buffer...
                    with self.thread_group(thread_begin=0, num_threads=32):
                        self.tma.wait_group(0, read=True)
                    self.sync()  # ...before any thread of the group overwrites it
                    self.store_shared(sc[group], self.cast(acc, dtype=float16))
                    self.fence.proxy_async(space="shared")  # make the generic-proxy writes visible to TMA
                    self.sync()  # every row is in the buffer
                    # One warp hands the buffer to TMA and the group returns to MMAs; the store drains meanwhile.
                    with self.thread_group(thread_begin=0, num_threads=32):
                        self.tma.shared_to_global(sc[group], gc, offsets=offsets)
                        self.tma.commit_group()
                else:
                    # C's rows do not start on 16-byte boundaries, so TMA cannot store them. The rows are staged the
                    # same way, not stored straight from the accumulator's registers: built that way, V6-V8 had
                    # ptxas 13.0 move reads of acc above the final wgmma wait, which the PTX places before them
                    # (tests/test_epilogue_build.py checks every WGMMA version's SASS for such reads). The group's
                    # threads copy the staged rows out, masked at M and N.
                    self.sync()  # every thread has copied the previous tile's rows out before any overwrites them
                    staged = sc[group]
                    self.store_shared(staged, self.cast(acc, dtype=float16))
                    self.sync()  # every row is in shared memory
                    # One fp16 per thread per store: with N odd a row of C may start on any 2-byte boundary (even
                    # N % 8 != 0 gives 4 or 8), so no wider store fits every N. A warp stores 64 contiguous bytes.
                    rows = self.load_shared(staged)
                    self.annotate_layout(rows, self.cuda.default_register_layout(4, float16, staged.shape, 1))
                    self.store_global(gc, rows, offsets=offsets)
            # The block may not exit while TMA still reads its shared memory. read=True would be enough (CUTLASS
            # waits so); the full wait also waits for the writes to global memory, once, at the block's end.
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0)


def main() -> None:
    common.run_main(MatmulV6(), TITLE)


if __name__ == "__main__":
    main()
