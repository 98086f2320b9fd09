# Experiment (a draft of V9, not yet a chapter version): V8 in clusters of two blocks along M, B multicast.
# What changes from V8:
# - Two blocks of a cluster take vertically adjacent tiles (tile rows 2p and 2p + 1 of the same column): they need
#   the same B tile. Each block loads half of it and TMA multicasts that half into both blocks' shared memory, so
#   B crosses L2 -> SM once per pair instead of twice: at 128 x 256, a block's operand bytes per K-tile go from
#   2 * (128 + 256) * 64 = 48 KB to 2 * (128 + 128) * 64 = 32 KB.
# - A stage may be refilled only once the consumers of BOTH blocks have read it (the peer's multicast writes into
#   this block's stage too): every consumer group arrives on the empty barrier of both blocks. The arrive is
#   released at CTA scope: Tilus's default for a remote arrive (cluster scope) makes ptxas put MEMBAR.ALL.CTA and
#   MEMBAR.ALL.GPU before each, in every K-tile (the V6 cluster attempt's build); the WGMMAs that read the stage
#   have retired (wait_group) before the arrive, so no fence is needed.
# - Each block's producer arms its own full barrier with all the bytes that land in its stage: its A slabs, its
#   half of B and the half the peer multicasts. The peer's half may land first; the barrier cannot complete before
#   the producer's own arrival, so the early bytes only count down a transaction count not yet raised.
# - The cluster synchronises twice: after the barriers are initialised (a peer may arrive on them or multicast
#   into this block's stages right away) and before exit (a block's shared memory must outlive the peer's last
#   multicast and remote arrive).
# - Raster groups count pairs of tile rows: 8 pairs are V8's 16 tile rows.
# Status: superseded by the version examples/hopper_matmul/matmul_v9.py (clusters sharing A or B, chosen by the
# tile model). Kept because the steps runs "v9 draft*" (V8's page) recorded it, with its fourth-stage knob (halves):
# over V8 those steps were unresolved, within a few percent, at 8192^3, 4096^3 and 16384x8192x1024.

import tilus
from matmul_v8 import CHUNK, NUM_SMS
from tilus import GlobalTensor, RegisterTensor, SharedTensor, float16, float32, int32
from tilus.hidet.ir.primitives.cuda.setmaxnreg import setmaxnreg  # PTX that Tilus 0.2.0 has no instruction for
from tilus.utils import cdiv

import common
import tile_model
from pipeline import ClusterPipeline, Pipeline
from raster import TileRaster

TITLE = "clusters of two with TMA multicast (draft)"
TUNED = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 8}


def config_for(m: int, n: int, k: int) -> dict[str, int]:
    """V8's tile for the problem (its model, unchanged for now), raster groups of 8 pairs.

    The model counts ceil(tiles / 132) rounds; in pairs the draft takes ceil(pairs / 66): the same at every sweep
    shape, a round more at some small ones (576 x 6144 at 128 x 256: 1 -> 2). The model must count pairs before
    the draft becomes a version."""
    return {**tile_model.choose(m, n, k, NUM_SMS).config, "block_k": tile_model.BLOCK_K, "swizzle_size": 8}


@tilus.autotune("block_m, block_n, consumers, num_stages", [list(t.config.values()) for t in tile_model.CANDIDATES])
@tilus.autotune("block_k", [tile_model.BLOCK_K])
# Pairs of tile rows per raster group: 8 pairs are V8's 16 rows.
@tilus.autotune("swizzle_size", [8])
# Blocks per cluster along M, each loading 1 / cluster of B for all (an experiment: 4 halves B's bytes again).
@tilus.autotune("cluster", [2])
# Accumulators per consumer group (clusters of two): 2 keeps the two halves of B's columns in two accumulators,
# so that C can be staged half at a time in half the buffer, which leaves room for a fourth stage at 128 x 256.
@tilus.autotune("halves", [1])
class MatmulV9Cluster(tilus.Script):
    def __init__(
        self,
        block_m: int,
        block_n: int,
        consumers: int,
        num_stages: int,
        block_k: int,
        swizzle_size: int,
        cluster: int = 2,
        grid_blocks: int = 0,
        halves: int = 1,
    ):
        super().__init__()
        assert halves in (1, 2) and (halves == 1 or cluster == 2), (halves, cluster)
        self.halves = halves
        self.cluster_size = cluster
        # Whole clusters, one block per SM (or grid_blocks, when fewer clusters fit in the GPCs).
        self.grid_blocks = grid_blocks or NUM_SMS // cluster * cluster
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.consumers, self.num_stages, self.swizzle_size = consumers, num_stages, swizzle_size
        self.group_m = block_m // consumers
        self.tile = tile_model.Tile(block_m, block_n, consumers, num_stages)
        self.producer = consumers * 128
        self.num_sms = NUM_SMS

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        self.attrs.blocks = self.grid_blocks
        self.attrs.cluster_blocks = self.cluster_size
        self.attrs.warps = self.tile.threads // 32
        # The raster walks pairs of tile rows; a pair's second tile may lie past M (TMA reads zeros, stores clip).
        raster = TileRaster(cdiv(cdiv(m_size, bm), self.cluster_size), cdiv(n_size, bn), self.swizzle_size)
        rank: int32 = self.blockIdx.x % self.cluster_size

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, self.consumers, gm, bk])
        # B in two halves of block_n / 2 rows: half r is loaded by the block of rank r and multicast to both.
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, self.cluster_size, bn // self.cluster_size, bk])
        sc = self.shared_tensor(dtype=float16, shape=[self.consumers, bn // self.halves // CHUNK, gm, CHUNK])
        pipe = ClusterPipeline(self.num_stages, self.consumers, self.cluster_size)
        # Both blocks' barriers are initialised before either block arrives on or multicasts into the other.
        self.cluster.sync()

        if self.tile.rebalances_registers:
            with self.thread_group(thread_begin=self.producer, num_threads=128):
                setmaxnreg(tile_model.PRODUCER_REGISTERS, "dec")
                with self.thread_group(thread_begin=0, num_threads=32):
                    self.produce(pipe, raster, rank, ga, gb, sa, sb, k_size)
        else:
            with self.thread_group(thread_begin=self.producer, num_threads=32):
                self.produce(pipe, raster, rank, ga, gb, sa, sb, k_size)

        self.consumer(0, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        if self.consumers == 3:
            self.consumer(2, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        # No block exits while its peer may still multicast into its stages or arrive on its barriers.
        self.cluster.sync()

    def produce(
        self,
        pipe: Pipeline,
        raster: TileRaster,
        rank: int32,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        k_size: int,
    ):
        """The producer warp: its own A slabs, and its half of the pair's B tile for both blocks."""
        half = self.block_n // self.cluster_size
        for pair in range(self.blockIdx.x // self.cluster_size, raster.num_tiles, self.gridDim.x // self.cluster_size):
            pair_m, tile_n = raster.tile_of(pair)
            offset_m: int32 = self.block_m * (pair_m * self.cluster_size + rank)
            offset_n: int32 = self.block_n * tile_n
            for offset_k in range(0, k_size, self.block_k):
                # The stage's bytes in this block: its A slabs and both halves of B (one from the peer).
                stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                full = pipe.full[stage]
                for group in range(self.consumers):
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, group], offsets=[offset_m + group * self.group_m, offset_k], mbarrier=full
                    )
                # This block's half of B, written to the same offset in both blocks; each block's full barrier
                # at that offset counts the bytes that land in it.
                self.tma.global_to_shared(
                    src=gb,
                    dst=sb[stage, rank],
                    offsets=[offset_n + rank * half, offset_k],
                    mbarrier=full,
                    multicast_mask=(1 << self.cluster_size) - 1,
                )

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
            if self.tile.rebalances_registers:
                setmaxnreg(self.tile.consumer_registers, "inc")
            clusters = self.gridDim.x // self.cluster_size
            for pair in range(self.blockIdx.x // self.cluster_size, raster.num_tiles, clusters):
                pair_m, tile_n = raster.tile_of(pair)
                tile_m = pair_m * self.cluster_size + rank
                width = self.block_n // self.halves
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, width], init=0.0)
                if self.halves == 2:
                    acc_right = self.register_tensor(dtype=float32, shape=[self.group_m, width], init=0.0)
                for k_tile in range(cdiv(k_size, self.block_k)):
                    stage = pipe.consumer_acquire()
                    self.wgmma.fence()
                    if self.halves == 2:
                        # One m64n128 WGMMA per half of B (the halves the pair's blocks loaded), into its own acc.
                        self.wgmma.mma(sa[stage, group], sb[stage, 0].transpose(), acc)
                        self.wgmma.mma(sa[stage, group], sb[stage, 1].transpose(), acc_right)
                    else:
                        # The two halves of B form one block_n x block_k tile (each a whole number of swizzle atoms).
                        b_tile = self.reshape_shared(sb[stage], [self.block_n, self.block_k])
                        self.wgmma.mma(sa[stage, group], b_tile.transpose(), acc)
                    self.wgmma.commit_group()
                    self.wgmma.wait_group(1)
                    if k_tile > 0:
                        pipe.consumer_release()
                self.wgmma.wait_group(0)
                pipe.consumer_release()

                self.store_c(group, acc, 0, tile_m, tile_n, sc, gc, tma_store)
                if self.halves == 2:
                    self.store_c(group, acc_right, 1, tile_m, tile_n, sc, gc, tma_store)
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0)

    def store_c(
        self,
        group: int,
        acc: RegisterTensor,
        half: int,
        tile_m: int32,
        tile_n: int32,
        sc: SharedTensor,
        gc: GlobalTensor,
        tma_store: bool,
    ):
        """One accumulator (the whole tile's columns, or one half) through the staging buffer to C."""
        width = self.block_n // self.halves
        offsets = [self.block_m * tile_m + group * self.group_m, self.block_n * tile_n + half * width]
        tile_view = self.reshape_shared(sc.permute([0, 2, 1, 3]), [self.consumers, self.group_m, width])
        if tma_store:
            # The buffer is free once TMA has read the last store from it (the previous tile's, or the other half).
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0, read=True)
            self.sync()
            self.store_shared(tile_view[group], self.cast(acc, dtype=float16))
            self.fence.proxy_async(space="shared")
            self.sync()
            with self.thread_group(thread_begin=0, num_threads=32):
                for chunk in range(width // CHUNK):
                    self.tma.shared_to_global(sc[group, chunk], gc, offsets=[offsets[0], offsets[1] + chunk * CHUNK])
                self.tma.commit_group()
        else:
            self.sync()
            staged = tile_view[group]
            self.store_shared(staged, self.cast(acc, dtype=float16))
            self.sync()
            rows = self.load_shared(staged)
            self.annotate_layout(rows, self.cuda.default_register_layout(4, float16, staged.shape, 1))
            self.store_global(gc, rows, offsets=offsets)


def main() -> None:
    common.run_main(common.PerProblem(MatmulV9Cluster, config_for), TITLE)


if __name__ == "__main__":
    main()
