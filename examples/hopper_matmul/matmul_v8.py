# What changed from V7:
# - The tile is no longer fixed at 128 x 256: config_for() asks a model (tile_model.py) for each problem, out of a
#   menu of 128 x 256, 256 x 128, 128 x 192, 128 x 128 and 192 x 192. It predicts the busiest SM's time from wave
#   quantization (rounds = ceil(tiles / SMs), edge tiles counted whole), the operand bytes each tile moves per
#   FLOP, and the extra time a last column of tiles mostly past N was measured to take; when K % 16 != 0 puts
#   operand rows off L2's 32-byte sectors, L2 bounds the loads and the model charges every byte loaded. At 5120^3,
#   800 tiles of 128 x 256 make 6.06 waves: a seventh round in which 8 of 132 SMs work; 729 tiles of 192 x 192 fit
#   in 6 rounds. On every shape of the benchmark's sweep the model keeps V7's tile.
# - A rule, not an autotune space: a new problem size costs one build (one nvcc run) of the tile the model names,
#   and every process picks the same tile. The autotune lists below are the model's menu.
# - The number of consumer warp groups follows the tile: 192 x 192 runs three, the others two; each group takes
#   block_m / consumers rows (a 256-row tile gives each group 128 rows: two m64 WGMMAs per k16 step).
# - Three consumer warp groups and a producer warp are 13 warps, which the launch counts as 16 (a multiple of the
#   four sub-partitions): 128 registers per thread for a 96-register accumulator, under the model's margin
#   (accumulator + 40). So that tile's producer is a whole warp group that gives registers up with setmaxnreg
#   (PTX that Tilus 0.2.0 has no instruction for): 40 for it, 152 per consumer. ptxas fits the build without it
#   too (122, no spills: Try it).
# - Each tile takes as many pipeline stages as fit next to its C staging in 227 KB: 3, 3, 4, 6 and 3.
# - Tilus 0.2.0 would split a 192-wide WGMMA into three 64-wide ones; tilus_fixes.py (fix 4) issues m64n192k16.

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.hidet.ir.primitives.cuda.setmaxnreg import setmaxnreg  # PTX that Tilus 0.2.0 has no instruction for
from tilus.utils import cdiv

import common
import tile_model
from pipeline import Pipeline
from raster import TileRaster

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "a tile chosen per problem"

CHUNK = tile_model.CHUNK  # columns of C per staging chunk: 64 fp16 = 128 bytes, one row of the 128-byte swizzle


# Asked once, here: Tilus builds configurations in forked workers, which must not touch CUDA.
NUM_SMS = common.sm_count()

# What the model picks at the chapter's shape (8192³): V7's tile. The pages and the build check read this one
# configuration; tests/test_v8_tile_model.py holds it to config_for(8192, 8192, 8192).
TUNED = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 16}


def config_for(m: int, n: int, k: int) -> dict[str, int]:
    """The configuration V8 runs an M x N x K problem with: the model's tile, V7's block_k and raster groups."""
    return {**tile_model.choose(m, n, k, NUM_SMS).config, "block_k": tile_model.BLOCK_K, "swizzle_size": 16}


# The model's menu: tile, consumer warp groups and the stages that fit (tile_model.CANDIDATES, V7's tile first).
@tilus.autotune("block_m, block_n, consumers, num_stages", [list(t.config.values()) for t in tile_model.CANDIDATES])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [tile_model.BLOCK_K])
# Tile rows per raster group: V6's measured best.
@tilus.autotune("swizzle_size", [16])
class MatmulV8(tilus.Script):
    def __init__(self, block_m: int, block_n: int, consumers: int, num_stages: int, block_k: int, swizzle_size: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.consumers, self.num_stages, self.swizzle_size = consumers, num_stages, swizzle_size
        self.group_m = block_m // consumers  # rows of the tile per consumer warp group
        self.tile = tile_model.Tile(block_m, block_n, consumers, num_stages)  # registers and threads per role
        self.producer = consumers * 128  # first thread of the producer: one warp, or a warp group (setmaxnreg)
        self.num_sms = NUM_SMS

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        # One block per SM, each looping over tiles; blocks left without a tile just exit.
        self.attrs.blocks = self.num_sms
        # Consumer warp groups first, then the producer.
        self.attrs.warps = self.tile.threads // 32
        raster = TileRaster(cdiv(m_size, bm), cdiv(n_size, bn), self.swizzle_size)

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros, writes are clipped.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for all of them.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, self.consumers, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # Staging chunks for C, 64 columns each, in TMA's 128-byte swizzle (V7).
        sc = self.shared_tensor(dtype=float16, shape=[self.consumers, bn // CHUNK, gm, CHUNK])
        # Full/empty barriers per stage; stage indices and phases carry on from one tile to the next.
        pipe = Pipeline(self.num_stages, num_consumers=self.consumers)

        if self.tile.rebalances_registers:
            # A whole producer warp group gives up registers so that the consumers get the model's headroom over
            # their accumulators (16 warps leave 128 registers per thread at launch). Every warp of a group must
            # run setmaxnreg; then one warp of it issues the copies and the other three are done.
            with self.thread_group(thread_begin=self.producer, num_threads=128):
                setmaxnreg(tile_model.PRODUCER_REGISTERS, "dec")
                with self.thread_group(thread_begin=0, num_threads=32):
                    self.produce(pipe, raster, ga, gb, sa, sb, k_size)
        else:
            with self.thread_group(thread_begin=self.producer, num_threads=32):
                self.produce(pipe, raster, ga, gb, sa, sb, k_size)

        # TMA needs 16-byte global row strides: with N % 8 != 0 the consumers copy C out themselves (epilogue).
        # Consumer warp groups: the same code, each on its own rows.
        self.consumer(0, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        if self.consumers == 3:
            self.consumer(2, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)

    def produce(
        self,
        pipe: Pipeline,
        raster: TileRaster,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        k_size: int,
    ):
        """The producer warp: walks the block's tiles, refilling each stage as soon as it is freed, across tiles."""
        for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
            tile_m, tile_n = raster.tile_of(tile)
            offset_m: int32 = self.block_m * tile_m
            offset_n: int32 = self.block_n * tile_n
            for offset_k in range(0, k_size, self.block_k):
                # Wait for a free stage and arm its full barrier with the bytes TMA will bring.
                stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                # One A slab per consumer group and the shared B tile; full[stage] completes when all have landed.
                full = pipe.full[stage]
                for group in range(self.consumers):
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, group], offsets=[offset_m + group * self.group_m, offset_k], mbarrier=full
                    )
                self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[offset_n, offset_k], mbarrier=full)

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
            if self.tile.rebalances_registers:
                setmaxnreg(self.tile.consumer_registers, "inc")  # the registers the producer gave up
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
                    # Epilogue: the previous tile's TMA stores must have finished reading the staging chunks...
                    with self.thread_group(thread_begin=0, num_threads=32):
                        self.tma.wait_group(0, read=True)
                    self.sync()  # ...before any thread of the group overwrites them
                    # The group's chunks seen as one group_m x block_n tile: chunk j holds columns [64 j, 64 j + 64).
                    tile_view = self.reshape_shared(
                        sc.permute([0, 2, 1, 3]), [self.consumers, self.group_m, self.block_n]
                    )
                    self.store_shared(tile_view[group], self.cast(acc, dtype=float16))
                    self.fence.proxy_async(space="shared")  # make the generic-proxy writes visible to TMA
                    self.sync()  # every chunk is in shared memory
                    # One warp hands the chunks to TMA, one store each, and the group returns to MMAs.
                    with self.thread_group(thread_begin=0, num_threads=32):
                        for chunk in range(self.block_n // CHUNK):
                            self.tma.shared_to_global(
                                sc[group, chunk], gc, offsets=[offsets[0], offsets[1] + chunk * CHUNK]
                            )
                        self.tma.commit_group()
                else:
                    # C's rows do not start on 16-byte boundaries, so TMA cannot store them. The rows are staged the
                    # same way, not stored straight from the accumulator's registers: built that way, V6-V8 had
                    # ptxas 13.0 move reads of acc above the final wgmma wait, which the PTX places before them
                    # (tests/test_epilogue_build.py checks every WGMMA version's SASS for such reads). The group's
                    # threads copy the staged rows out, masked at M and N.
                    self.sync()  # every thread has copied the previous tile's rows out before any overwrites them
                    # The chunks seen as one tile, as above.
                    tile_view = self.reshape_shared(
                        sc.permute([0, 2, 1, 3]), [self.consumers, self.group_m, self.block_n]
                    )
                    staged = tile_view[group]
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
    common.run_main(common.PerProblem(MatmulV8, config_for), TITLE)


if __name__ == "__main__":
    main()
