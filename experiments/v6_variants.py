# Experiment (not a chapter version): V6 as it was before its steps, with knobs for the attempts after it.
# The V6 chapter's "Every step, measured" table: `python -m matmul_bench record --steps all` times these
# variants (specs/steps.py).
# MatmulV6 with one more knob, `epilogue`, which picks how C leaves the block:
#   "rows"      V6's staging buffer of plain 512-byte rows (eight-way bank conflicts on the stmatrix writes);
#   "chunks"    four 64-column chunks in TMA's 128-byte swizzle (conflict-free writes, four TMA stores);
#   "registers" no staging buffer: fp16 straight from registers to global memory, which frees 64 KB for a stage.
# "rows" runs V6's consumer, "chunks" V7's, "registers" V6's K loop with this file's store; the staging memory
# (allocated in __call__) is this file's too. Each variant differs from V6 by one change.

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.utils import cdiv

from matmul_data.loader import load

matmul_v6, matmul_v7 = load("matmul_v6"), load("matmul_v7")
CONSUMERS, PRODUCER = matmul_v6.CONSUMERS, matmul_v6.PRODUCER  # V6's warp roles
Pipeline, TileRaster = load("pipeline").Pipeline, load("raster").TileRaster


@tilus.autotune("epilogue", ["rows"])
class MatmulV6Variants(matmul_v6.MatmulV6):
    # Tilus's autotune decorator adds to the class's `_autotune_space`, which a subclass shares with its parent:
    # a copy of V6's space (tile, stages, raster groups), so that the knob above is this class's alone.
    _autotune_space = dict(matmul_v6.MatmulV6._autotune_space)

    # The chunks' consumer is V7's: V7 kept this epilogue. (Its loop over the chunks is named `chunk` where this
    # file's copy had `j`, the one difference in Tilus's source.cu; the PTX is the same.)
    chunks_consumer = matmul_v7.MatmulV7.consumer

    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int, swizzle_size: int, epilogue: str):
        super().__init__(block_m, block_n, block_k, num_stages, swizzle_size)
        assert epilogue in ("rows", "chunks", "registers"), epilogue
        self.epilogue = epilogue

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
        # Staging memory for C, the knob: V6's plain rows or swizzled 64-column chunks (none for registers).
        if self.epilogue == "rows":
            sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, gm, bn])
            self.annotate_layout(sc, self.cuda.shared_layout([CONSUMERS, gm, bn]))
        elif self.epilogue == "chunks":
            sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, bn // 64, gm, 64])
        # Full/empty barriers per stage; stage indices and phases carry on from one tile to the next.
        pipe = Pipeline(self.num_stages, num_consumers=CONSUMERS)

        # Producer warp: walks the same tiles, running up to num_stages K-tiles ahead, across tile boundaries.
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

        # TMA addresses global rows in 16-byte steps: with N % 8 != 0, the staged rows are copied out by threads.
        if self.epilogue == "chunks":
            self.chunks_consumer(0, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
            self.chunks_consumer(1, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        elif self.epilogue == "rows":
            self.consumer(0, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
            self.consumer(1, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        else:
            self.registers_consumer(0, pipe, raster, sa, sb, gc, k_size)
            self.registers_consumer(1, pipe, raster, sa, sb, gc, k_size)

    def registers_consumer(
        self,
        group: int,
        pipe: Pipeline,
        raster: TileRaster,
        sa: SharedTensor,
        sb: SharedTensor,
        gc: GlobalTensor,
        k_size: int,
    ):
        # V6's consumer up to the drain; then the group stores its fp16 tile from registers, as V5 does.
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
                tile_m, tile_n = raster.tile_of(tile)
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
                for k_tile in range(cdiv(k_size, self.block_k)):
                    stage = pipe.consumer_acquire()
                    self.wgmma.fence()
                    self.wgmma.mma(sa[stage, group], sb[stage].transpose(), acc)
                    self.wgmma.commit_group()
                    self.wgmma.wait_group(1)
                    if k_tile > 0:
                        pipe.consumer_release()
                self.wgmma.wait_group(0)
                pipe.consumer_release()
                offsets = [self.block_m * tile_m + group * self.group_m, self.block_n * tile_n]
                # No staging buffer, no TMA store: the stores are masked at M and N, and the next tile's MMAs
                # wait until they have been issued.
                self.store_global(gc, self.cast(acc, dtype=float16), offsets=offsets)
