# What changed from V8:
# - Two blocks of a cluster may share one operand: a pair of tiles in the same column of C (along M) needs the same
#   B tile, a pair in the same row (along N) the same A tile. Each block of the pair loads half of the shared tile
#   and TMA multicasts that half into both blocks' shared memory, so the shared operand crosses from L2 to the SMs
#   once per pair instead of twice: at 128 x 192 sharing B, a block's operand bytes per K-tile go from
#   (128 + 192) rows to (128 + 96) rows of 128 bytes, 30% fewer.
# - The model (tile_model.py) now chooses the sharing as well as the tile: clusters along M sharing B, along N sharing
#   A, or none. Sharing pays where L2 bounds the operand loads: when K % 16 != 0, every other operand row starts off
#   L2's 32-byte sectors, and a pair that loads B once moves a third fewer bytes per FLOP at 128 x 256. Elsewhere the
#   cluster's handshake costs about what the saved bytes buy, and the model leaves clusters off: V9 is V8 there.
# - A stage may be refilled only when the consumers of BOTH blocks have read it (the peer's multicast writes into it
#   too): every consumer group arrives on the empty barrier of both blocks (pipeline.ClusterPipeline), at CTA scope,
#   so that ptxas puts no memory fence in the K loop.
# - Each block arms its full barrier with every byte that lands in its stage: its own loads and the peer's half. The
#   cluster synchronises twice: after the barriers are set up (the peer may multicast into them at once) and before
#   exit (a block's shared memory must outlive the peer's last multicast and remote arrive).
# - The raster walks units of one tile, or of a pair of tiles; a pair's second tile may lie wholly past M or N: TMA
#   reads zeros for it and clips its stores, and the model counts it as work.

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.hidet.ir.primitives.cuda.setmaxnreg import setmaxnreg  # PTX that Tilus 0.2.0 has no instruction for
from tilus.utils import cdiv

import common
import tile_model
from pipeline import ClusterPipeline, Pipeline
from raster import TileRaster

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "clusters that share an operand where L2 binds"

CHUNK = tile_model.CHUNK  # columns of C per staging chunk: 64 fp16 = 128 bytes, one row of the 128-byte swizzle
# Raster groups, in units: 16 tile rows (V6's measured best), or 8 pairs of tile rows when a pair runs along M.
SWIZZLE = {"none": 16, "a": 16, "b": 8}


# Asked once, here: Tilus builds configurations in forked workers, which must not touch CUDA.
NUM_SMS = common.sm_count()

# What the model picks at the chapter's shape (8192³); tests/test_v9_tile_model.py holds it to config_for.
TUNED = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 16,
         "share": "none"}  # fmt: skip


def config_for(m: int, n: int, k: int) -> dict[str, int | str]:
    """The configuration V9 runs an M x N x K problem with: the model's tile and sharing, V7's block_k."""
    choice = tile_model.choose_shared(m, n, k, NUM_SMS)
    return {**choice.tile.config, "block_k": tile_model.BLOCK_K, "swizzle_size": SWIZZLE[choice.share],
            "share": choice.share}  # fmt: skip


# The model's menu of tiles (V8's), each with the stages that fit.
@tilus.autotune("block_m, block_n, consumers, num_stages", [list(t.config.values()) for t in tile_model.CANDIDATES])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [tile_model.BLOCK_K])
# Which operand a cluster of two shares: "none" (one block per tile, V8), "b" (a pair along M), "a" (along N),
# each with its raster groups (SWIZZLE).
@tilus.autotune("share, swizzle_size", [[share, SWIZZLE[share]] for share in tile_model.SHARES])
class MatmulV9(tilus.Script):
    def __init__(
        self, block_m: int, block_n: int, consumers: int, num_stages: int, block_k: int, swizzle_size: int, share: str
    ):
        super().__init__()
        assert share in tile_model.SHARES and (share != "a" or consumers == 2), (share, consumers)
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.consumers, self.num_stages, self.swizzle_size = consumers, num_stages, swizzle_size
        self.group_m = block_m // consumers  # rows of the tile per consumer warp group
        self.tile = tile_model.Tile(block_m, block_n, consumers, num_stages)  # registers and threads per role
        self.producer = consumers * 128  # first thread of the producer: one warp, or a warp group (setmaxnreg)
        self.share_a, self.share_b = share == "a", share == "b"
        self.cluster_size = 1 if share == "none" else 2
        # A unit of the raster is one tile or a pair: pair_m x pair_n tiles, the block of rank r taking the r-th.
        self.pair_m, self.pair_n = (2 if self.share_b else 1), (2 if self.share_a else 1)
        self.num_sms = NUM_SMS

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        # One block per SM in whole clusters, each looping over units; blocks left without a unit just exit.
        self.attrs.blocks = self.num_sms // self.cluster_size * self.cluster_size
        if self.cluster_size > 1:
            self.attrs.cluster_blocks = self.cluster_size
        self.attrs.warps = self.tile.threads // 32
        # The raster walks units: a pair of tiles where blocks pair up, else one tile (its num_tiles counts units).
        raster = TileRaster(cdiv(cdiv(m_size, bm), self.pair_m), cdiv(cdiv(n_size, bn), self.pair_n), self.swizzle_size)
        rank: int32 = self.blockIdx.x % self.cluster_size  # which tile of its pair this block computes

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros, writes are clipped.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for all of them; in pairs along M, B is seen as
        # two halves of rows, one loaded by each block of the pair.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, self.consumers, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, self.pair_m, bn // self.pair_m, bk])
        # Staging chunks for C, 64 columns each, in TMA's 128-byte swizzle (V7).
        sc = self.shared_tensor(dtype=float16, shape=[self.consumers, bn // CHUNK, gm, CHUNK])
        # Full/empty barriers per stage; with a cluster, empty counts the consumer groups of both blocks.
        if self.cluster_size > 1:
            pipe = ClusterPipeline(self.num_stages, self.consumers, self.cluster_size)
            # Both blocks' barriers are set up before either block arrives on or multicasts into the other.
            self.cluster.sync()
        else:
            pipe = Pipeline(self.num_stages, num_consumers=self.consumers)

        if self.tile.rebalances_registers:
            # A whole producer warp group gives up registers so that the consumers get the model's headroom over
            # their accumulators (16 warps leave 128 registers per thread at launch). Every warp of a group must
            # run setmaxnreg; then one warp of it issues the copies and the other three are done.
            with self.thread_group(thread_begin=self.producer, num_threads=128):
                setmaxnreg(tile_model.PRODUCER_REGISTERS, "dec")
                with self.thread_group(thread_begin=0, num_threads=32):
                    self.produce(pipe, raster, rank, ga, gb, sa, sb, k_size)
        else:
            with self.thread_group(thread_begin=self.producer, num_threads=32):
                self.produce(pipe, raster, rank, ga, gb, sa, sb, k_size)

        # TMA needs 16-byte global row strides: with N % 8 != 0 the consumers copy C out themselves (epilogue).
        self.consumer(0, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        if self.consumers == 3:
            self.consumer(2, pipe, raster, rank, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        if self.cluster_size > 1:
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
        """The producer warp: its own operands, and its half of a shared one for both blocks of the pair."""
        everyone = (1 << self.cluster_size) - 1  # the multicast mask: every block of the cluster
        clusters = self.gridDim.x // self.cluster_size
        for unit in range(self.blockIdx.x // self.cluster_size, raster.num_tiles, clusters):
            unit_m, unit_n = raster.tile_of(unit)
            # rank % pair: the block's place in its pair along M or N (0 where pairs do not run that way).
            tile_m = unit_m * self.pair_m + rank % self.pair_m
            tile_n = unit_n * self.pair_n + rank % self.pair_n
            offset_m: int32 = self.block_m * tile_m
            offset_n: int32 = self.block_n * tile_n
            for offset_k in range(0, k_size, self.block_k):
                # Wait for a free stage (in both blocks) and arm its full barrier with every byte that lands in it.
                stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                full = pipe.full[stage]
                if self.share_a:
                    # The pair's A tile: its halves are the two consumer groups' slabs; this block loads slab `rank`
                    # into both blocks.
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, rank], offsets=[offset_m + rank * self.group_m, offset_k], mbarrier=full,
                        multicast_mask=everyone,
                    )  # fmt: skip
                else:
                    for group in range(self.consumers):
                        self.tma.global_to_shared(
                            src=ga, dst=sa[stage, group], offsets=[offset_m + group * self.group_m, offset_k],
                            mbarrier=full,
                        )  # fmt: skip
                if self.share_b:
                    # The pair's B tile in halves of block_n / 2 rows: this block's half, into both blocks.
                    half = self.block_n // 2
                    self.tma.global_to_shared(
                        src=gb, dst=sb[stage, rank], offsets=[offset_n + rank * half, offset_k], mbarrier=full,
                        multicast_mask=everyone,
                    )  # fmt: skip
                else:
                    self.tma.global_to_shared(src=gb, dst=sb[stage, 0], offsets=[offset_n, offset_k], mbarrier=full)

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
                setmaxnreg(self.tile.consumer_registers, "inc")  # the registers the producer gave up
            clusters = self.gridDim.x // self.cluster_size
            for unit in range(self.blockIdx.x // self.cluster_size, raster.num_tiles, clusters):
                unit_m, unit_n = raster.tile_of(unit)
                tile_m = unit_m * self.pair_m + rank % self.pair_m
                tile_n = unit_n * self.pair_n + rank % self.pair_n
                # This group's fp32 accumulator (group_m x block_n), zeroed for every tile.
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
                for k_tile in range(cdiv(k_size, self.block_k)):
                    # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
                    stage = pipe.consumer_acquire()
                    # Order earlier register accesses to acc (its zeroing for this tile, the previous tile's
                    self.wgmma.fence()  # epilogue reads) before the async MMA reads and writes acc
                    # The B tile as one block_n x block_k operand, whether one block loaded it or two halves did.
                    b_tile = self.reshape_shared(sb[stage], [self.block_n, self.block_k])
                    self.wgmma.mma(sa[stage, group], b_tile.transpose(), acc)  # own A slab x shared B tile
                    self.wgmma.commit_group()
                    # Keep this K-tile's MMA in flight; only the previous K-tile's must have retired...
                    self.wgmma.wait_group(1)
                    if k_tile > 0:
                        pipe.consumer_release()  # ...so its stage goes back to the producer (of both blocks)
                # Drain the last MMA before reading acc, and release its stage.
                self.wgmma.wait_group(0)
                pipe.consumer_release()

                offsets = [self.block_m * tile_m + group * self.group_m, self.block_n * tile_n]
                # The group's chunks seen as one group_m x block_n tile: chunk j holds columns [64 j, 64 j + 64).
                tile_view = self.reshape_shared(sc.permute([0, 2, 1, 3]), [self.consumers, self.group_m, self.block_n])
                if tma_store:
                    # Epilogue (V7): the previous tile's TMA stores must have finished reading the staging chunks...
                    with self.thread_group(thread_begin=0, num_threads=32):
                        self.tma.wait_group(0, read=True)
                    self.sync()  # ...before any thread of the group overwrites them
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
    common.run_main(common.PerProblem(MatmulV9, config_for), TITLE)


if __name__ == "__main__":
    main()
