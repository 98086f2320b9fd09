# Experiment (not a chapter version): V6 with clusters of two blocks and TMA multicast of the B tile.
# The two blocks of a cluster take vertically adjacent tiles (same B columns); each loads half of the
# 256-row B tile and multicasts it into both blocks' shared memory. A stage may only be refilled once the
# consumers of BOTH blocks have released it, so every consumer warp group arrives on the empty barrier of
# both blocks (a remote arrive through mapa). With the default cluster-scope arrives, far slower than V6: see V6.
# The grid is a knob (grid_blocks, default one block per SM). A hypothesis, since ruled out: fewer clusters of two
# might fit on the GPU at once than 132 / 2 (a cluster's blocks must share a GPC), so that the last clusters would
# run as a second wave. `python -m matmul_bench check clusters` asked the driver on the H200: all 66 fit
# (plots/results/logs/cluster-occupancy-2026-12-02.txt). The "clusters in smaller grids" steps run is unmeasured.
# The cause, measured: two fences (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU) before each of the two remote arrives per K-tile
# and consumer group; `arrive_scope="cta"` removes them, 1.5x faster (steps run "clusters without fences").

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.utils import cdiv

from matmul_data.loader import load

matmul_v6 = load("matmul_v6")
CONSUMERS, PRODUCER = matmul_v6.CONSUMERS, matmul_v6.PRODUCER  # V6's warp roles
Pipeline, TileRaster = load("pipeline").Pipeline, load("raster").TileRaster


# Empty barriers count the consumer warp groups of every block of the cluster; each group releases a stage in all.
class ClusterPipeline(Pipeline):
    def __init__(self, num_stages: int, num_consumers: int, arrive_scope: str, cluster_size: int = 2):
        super().__init__(num_stages, num_consumers * cluster_size)
        self.cluster_size: int = cluster_size
        # Release semantics at "cluster" scope (Tilus's default for a remote arrive): ptxas puts MEMBAR.ALL.CTA and
        # MEMBAR.ALL.GPU before each remote arrive. At "cta" scope (the PTX default, as CUTLASS's ClusterBarrier
        # arrives on a peer's barrier): no fence; the WGMMAs that read the stage have retired (wait_group) already.
        self.arrive_scope: str = arrive_scope

    def consumer_release(self):
        with self.single_thread():
            # Tilus 0.2.0 has no remote plain arrive; an arrive that expects 0 bytes is one.
            for rank in range(self.cluster_size):
                self.mbarrier.arrive_and_expect_tx_remote(
                    self.empty[self.release_stage], transaction_bytes=0, target_rank=rank, scope=self.arrive_scope
                )
        self.release_stage = self.release_stage + 1
        if self.release_stage == self.num_stages:
            self.release_stage = 0


# C is staged in swizzled 64-column chunks (v6_variants.py's "chunks", V7's epilogue); the knob is kept so that
# the steps runs' configurations name it.
@tilus.autotune("epilogue", ["chunks"])
# Blocks in the persistent grid, a multiple of the cluster size: one per SM, or fewer so that every cluster fits.
@tilus.autotune("grid_blocks", [132, 128, 120])
# The scope of the consumers' remote arrives on the empty barriers (ClusterPipeline says what each costs).
@tilus.autotune("arrive_scope", ["cluster", "cta"])
class MatmulV6Cluster(matmul_v6.MatmulV6):
    # Tilus's autotune decorator adds to the class's `_autotune_space`, which a subclass shares with its parent:
    # a copy of V6's space (tile, stages, raster groups), so that the knob above is this class's alone.
    _autotune_space = dict(matmul_v6.MatmulV6._autotune_space)

    def __init__(
        self,
        block_m: int,
        block_n: int,
        block_k: int,
        num_stages: int,
        swizzle_size: int,
        epilogue: str,
        grid_blocks: int = 132,
        arrive_scope: str = "cluster",
    ):
        super().__init__(block_m, block_n, block_k, num_stages, swizzle_size)
        assert grid_blocks % 2 == 0, grid_blocks  # whole clusters of two
        self.grid_blocks = grid_blocks
        assert epilogue == "chunks", epilogue
        self.epilogue = epilogue
        self.arrive_scope = arrive_scope

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        # Up to one block per SM (grid_blocks), each looping over tiles; blocks left without a tile just exit.
        self.attrs.blocks = self.grid_blocks
        # Warps 0-7: two consumer warp groups; warp 8: the producer.
        self.attrs.warps = CONSUMERS * 4 + 1
        self.attrs.cluster_blocks = 2
        raster = TileRaster(cdiv(cdiv(m_size, bm), 2), cdiv(n_size, bn), self.swizzle_size)
        rank: int32 = self.blockIdx.x % 2

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros, writes are clipped.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for both.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, CONSUMERS, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, 2, bn // 2, bk])
        # Staging chunks for C, 64 columns each, in TMA's 128-byte swizzle.
        sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, bn // 64, gm, 64])
        # Full/empty barriers per stage; stage indices and phases carry on from one tile to the next.
        pipe = ClusterPipeline(self.num_stages, num_consumers=CONSUMERS, arrive_scope=self.arrive_scope)
        self.cluster.sync()

        # Producer warp: walks the same tiles, running up to num_stages K-tiles ahead, across tile boundaries.
        with self.thread_group(thread_begin=PRODUCER, num_threads=32):
            for tile in range(self.blockIdx.x // 2, raster.num_tiles, self.gridDim.x // 2):
                pair_m, tile_n = raster.tile_of(tile)
                tile_m = pair_m * 2 + rank
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
                    self.tma.global_to_shared(
                        src=gb,
                        dst=sb[stage, rank],
                        offsets=[offset_n + rank * (bn // 2), offset_k],
                        mbarrier=full,
                        multicast_mask=3,
                    )

        # TMA addresses global rows in 16-byte steps: with N % 8 != 0, C's rows are stored from registers.
        # Consumer warp groups: the same code, each on its own rows.
        self.consumer(0, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.cluster.sync()

    def consumer(
        self,
        group: int,
        pipe: Pipeline,
        raster: TileRaster,
        rank: int32,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        gc: GlobalTensor,
        k_size: int,
        tma_store: bool,
    ):
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            for tile in range(self.blockIdx.x // 2, raster.num_tiles, self.gridDim.x // 2):
                pair_m, tile_n = raster.tile_of(tile)
                tile_m = pair_m * 2 + rank
                # This group's fp32 accumulator (group_m x block_n), zeroed for every tile.
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
                for k_tile in range(cdiv(k_size, self.block_k)):
                    # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
                    stage = pipe.consumer_acquire()
                    self.wgmma.fence()  # earlier writes to acc must be visible to the async MMA
                    # The two halves of B (one from each block) form one block_n x block_k tile.
                    b_tile = self.reshape_shared(sb[stage], [self.block_n, self.block_k])
                    self.wgmma.mma(sa[stage, group], b_tile.transpose(), acc)  # own A slab x shared B tile
                    self.wgmma.commit_group()
                    # Keep this K-tile's MMA in flight; only the previous K-tile's must have retired...
                    self.wgmma.wait_group(1)
                    if k_tile > 0:
                        pipe.consumer_release()  # ...so its stage (the oldest held) goes back to the producer
                # Drain the last MMA before reading acc, and release its stage.
                self.wgmma.wait_group(0)
                pipe.consumer_release()

                offsets = [self.block_m * tile_m + group * self.group_m, self.block_n * tile_n]
                if not tma_store:
                    self.store_global(gc, self.cast(acc, dtype=float16), offsets=offsets)
                else:
                    # Epilogue: the previous tile's TMA stores must have finished reading the chunks...
                    with self.thread_group(thread_begin=0, num_threads=32):
                        self.tma.wait_group(0, read=True)
                    self.sync()  # ...before any thread of the group overwrites them
                    # The chunks seen as one group_m x block_n tile: chunk j holds columns [64 j, 64 j + 64).
                    scv = self.reshape_shared(sc.permute([0, 2, 1, 3]), [CONSUMERS, self.group_m, self.block_n])
                    self.store_shared(scv[group], self.cast(acc, dtype=float16))
                    self.fence.proxy_async(space="shared")  # make the generic-proxy writes visible to TMA
                    self.sync()  # every chunk is in shared memory
                    # One warp hands the chunks to TMA, one store each, and the group returns to MMAs.
                    with self.thread_group(thread_begin=0, num_threads=32):
                        for j in range(self.block_n // 64):
                            self.tma.shared_to_global(sc[group, j], gc, offsets=[offsets[0], offsets[1] + j * 64])
                        self.tma.commit_group()
            # The block may not exit while TMA still reads its shared memory.
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0)
