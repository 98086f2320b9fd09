# What changed from V4: only the consumer's main loop. In V4 a consumer waited
# for its MMA to finish (wait_group(0)) before it released the stage, waited for
# the next one and issued the next MMAs: the warp group issued no MMA through
# all of that. Now a consumer issues K-tile k's MMAs and then waits with wait_group(1),
# which returns once K-tile k-1's MMAs have retired while K-tile k's keep the
# tensor cores busy. Only then is K-tile k-1's stage released: a stage goes back
# to the producer once the MMA that read it is done. A final wait_group(0)
# drains the last MMA before the epilogue reads the accumulator.
# Each consumer now holds two stages at a time, so the ring depth is re-tuned.

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.utils import cdiv

import common
from pipeline import Pipeline
from raster import TileRaster

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "WGMMA kept in flight"

CONSUMERS = 2  # consumer warp groups: threads [0, 256)
PRODUCER = CONSUMERS * 128  # first thread of the producer warp: threads [256, 288)


# The configuration this chapter measured, chosen from the autotune lists below at 8192³ on the H200. The
# benchmark, the GPU tests and the pages pin it, so every process builds this one kernel.
TUNED = {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 1}


# Output tile per block; each consumer warp group takes block_m / 2 rows.
@tilus.autotune("block_m, block_n", [[128, 256], [256, 128]])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [64])
# Stages of 48 KB: each consumer holds two, so a deeper ring keeps the producer further ahead.
@tilus.autotune("num_stages", [3, 4])
# Tile rows per raster group (a tile order, not the shared-memory swizzle); 1 is plain row-major order.
@tilus.autotune("swizzle_size", [1, 8])
class MatmulV5(tilus.Script):
    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int, swizzle_size: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.num_stages, self.swizzle_size = num_stages, swizzle_size
        self.group_m = block_m // CONSUMERS  # rows of the tile per consumer warp group

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        num_tiles_m = cdiv(m_size, bm)
        num_tiles_n = cdiv(n_size, bn)
        # A 1-D grid, one block per output tile; the raster decides which tile.
        self.attrs.blocks = num_tiles_m * num_tiles_n
        # Warps 0-7: two consumer warp groups; warp 8: the producer.
        self.attrs.warps = CONSUMERS * 4 + 1
        raster = TileRaster(num_tiles_m, num_tiles_n, self.swizzle_size)
        tile_m, tile_n = raster.tile_of(self.blockIdx.x)
        offset_m: int32 = bm * tile_m
        offset_n: int32 = bn * tile_n

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for both.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, CONSUMERS, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # Full/empty barriers per stage, and both sides' stage indices and phase bits.
        pipe = Pipeline(self.num_stages, num_consumers=CONSUMERS)

        # Producer warp: only issues TMA, refilling each stage as soon as the consumers free it.
        with self.thread_group(thread_begin=PRODUCER, num_threads=32):
            for offset_k in range(0, k_size, bk):
                # Wait for a free stage and arm its full barrier with the bytes TMA will bring.
                stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                # Two A slabs and the shared B tile; TMA completes full[stage] when all three have landed.
                full = pipe.full[stage]
                self.tma.global_to_shared(src=ga, dst=sa[stage, 0], offsets=[offset_m, offset_k], mbarrier=full)
                self.tma.global_to_shared(src=ga, dst=sa[stage, 1], offsets=[offset_m + gm, offset_k], mbarrier=full)
                self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[offset_n, offset_k], mbarrier=full)

        # Consumer warp groups: the same code, each on its own rows.
        self.consumer(0, pipe, sa, sb, gc, k_size, offset_m, offset_n)
        self.consumer(1, pipe, sa, sb, gc, k_size, offset_m, offset_n)

    def consumer(
        self,
        group: int,
        pipe: Pipeline,
        sa: SharedTensor,
        sb: SharedTensor,
        gc: GlobalTensor,
        k_size: int,
        offset_m: int32,
        offset_n: int32,
    ):
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            # This group's fp32 accumulator (group_m x block_n) in its 128 threads' registers.
            acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
            for k_tile in range(cdiv(k_size, self.block_k)):
                # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
                stage = pipe.consumer_acquire()
                self.wgmma.fence()  # order earlier register accesses (acc) before the async MMA reads and writes acc
                self.wgmma.mma(sa[stage, group], sb[stage].transpose(), acc)  # own A slab x shared B tile
                self.wgmma.commit_group()
                # Keep this K-tile's MMA in flight; only the previous K-tile's must have retired...
                self.wgmma.wait_group(1)
                if k_tile > 0:
                    pipe.consumer_release()  # ...so its stage (the oldest held) goes back to the producer
            # Drain the last MMA before reading acc, and release its stage.
            self.wgmma.wait_group(0)
            pipe.consumer_release()
            # Round to fp16 and store this group's rows; rows and columns past M and N are masked off.
            self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m + group * self.group_m, offset_n])


def main() -> None:
    common.run_main(MatmulV5(), TITLE)


if __name__ == "__main__":
    main()
