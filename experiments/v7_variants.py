# Experiment (not a chapter version): ping-pong consumers, the attempt after V6.
# `python -m matmul_bench record --steps "v7 round 1"` times these variants (specs/steps.py).
#
# V6 splits one 128 x 256 tile between its two consumer warp groups, so both finish at the same time and both run
# their epilogue while the tensor cores idle. Here each consumer warp group owns whole output tiles: the block's
# tiles (blockIdx.x, blockIdx.x + gridDim.x, ...) alternate between group 0 and group 1. The producer warp loads
# them in that order into one shared ring, so group 1 can start a tile only once the producer is past group 0's
# tile: the two groups run half a tile apart, and one group's epilogue (registers -> staging buffer -> TMA store)
# overlaps the other group's MMAs. This is CUTLASS's ping-pong schedule, with the order kept by the ring itself
# instead of named barriers: every stage belongs to exactly one consumer, which skips the other's K-tiles.
#
# Knobs (block_m x block_n is now the tile of ONE consumer warp group):
#   128 x 128: a 128 x 128 fp32 accumulator (128 registers per thread, as V6); two m64n128k16 WGMMAs per k16;
#              32 KB stages, 5 of them, plus a 32 KB staging buffer per group (224 KB in all).
#   64 x 256:  V6's per-group accumulator and m64n256k16 WGMMA, but the group's own B tile; 40 KB stages, 4 of them.
# The producer stays V6's single warp (288 threads): ptxas may give each thread up to 224 registers, so a whole
# producer warp group with setmaxnreg would buy nothing here.

import tilus
from tilus import GlobalTensor, SharedTensor, float16, float32, int32
from tilus.hidet.ir.primitives.cuda import barrier_sync
from tilus.hidet.ir.primitives.func import call_primitive_func, is_primitive_function, register_primitive_function
from tilus.hidet.ir.stmt import asm
from tilus.hidet.lang import attrs, script
from tilus.utils import cdiv

from matmul_data.loader import load

matmul_v6 = load("matmul_v6")
CONSUMERS, PRODUCER = matmul_v6.CONSUMERS, matmul_v6.PRODUCER  # V6's warp roles
Pipeline, TileRaster = load("pipeline").Pipeline, load("raster").TileRaster

# Named barriers that hand the turn to start a K loop from one consumer group to the other: TURN + g is "group g
# may start". Tilus's own self.sync() in thread groups takes ids from 1 up (this kernel uses 1 and 2); 0 is the
# block-wide __syncthreads. Both groups take part: 128 threads arrive, 128 wait.
TURN = 14
TURN_THREADS = CONSUMERS * 128

# Tilus 0.2.0's hidet `barrier_arrive` prints `barrier.sync` (its template ignores the mode), which would make the
# passing group wait for the other one. This primitive prints the non-blocking `barrier.arrive id, count`.
_ARRIVE = "hopper_matmul_barrier_arrive"


def _register_barrier_arrive() -> None:
    if is_primitive_function(_ARRIVE):
        return

    @script
    def hopper_matmul_barrier_arrive(barrier: int32, count: int32):
        attrs.func_kind = "cuda_internal"
        attrs.func_name = _ARRIVE
        asm("barrier.arrive %0, %1;", inputs=[barrier, count], is_volatile=True)

    register_primitive_function(name=hopper_matmul_barrier_arrive.name, func_or_type=hopper_matmul_barrier_arrive)


_register_barrier_arrive()


def barrier_arrive(barrier: int, count: int):
    """`barrier.arrive barrier, count`: mark this warp's arrival at a named barrier without waiting."""
    return call_primitive_func(_ARRIVE, args=[barrier, count])


class SharedRing(Pipeline):
    """V6's ring, where each stage is read by one consumer group, which steps over the other group's stages."""

    def skip(self, k_tiles: int32):
        """Advance this consumer's acquire and release indices past ``k_tiles`` stages that the other group reads."""
        # Each wrap to stage 0 flips the parity this side waits for (phase first: it reads the old index).
        if (self.consumer_stage + k_tiles) // self.num_stages % 2 == 1:
            self.consumer_phase = self.consumer_phase ^ 1
        self.consumer_stage = (self.consumer_stage + k_tiles) % self.num_stages
        self.release_stage = (self.release_stage + k_tiles) % self.num_stages


# Output tile of ONE consumer warp group.
@tilus.autotune("block_m, block_n", [[128, 128], [64, 256]])
@tilus.autotune("block_k", [64])
# 5 x 32 KB (128 x 128) or 4 x 40 KB (64 x 256) stages, plus 2 x 32 KB staging: 224 of the 227 KB.
@tilus.autotune("num_stages", [5, 4])
@tilus.autotune("swizzle_size", [16, 8, 32])
@tilus.autotune("schedule", ["pingpong"])
class MatmulV7Variants(matmul_v6.MatmulV6):
    """V6's block (grid, warp roles, producer warp) with ping-pong consumers: its __call__ and consumer replaced."""

    # Tilus's autotune decorator adds to the class's `_autotune_space`, which a subclass shares with its parent:
    # a space of its own (the decorators above), V6's untouched.
    _autotune_space: dict = {}

    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int, swizzle_size: int, schedule: str):
        super().__init__(block_m, block_n, block_k, num_stages, swizzle_size)  # V6's group_m goes unused here
        assert schedule == "pingpong", schedule
        self.schedule = schedule

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        self.attrs.blocks = self.num_sms
        # Warps 0-7: two consumer warp groups, each on its own tiles; warp 8: the producer.
        self.attrs.warps = CONSUMERS * 4 + 1
        raster = TileRaster(cdiv(m_size, bm), cdiv(n_size, bn), self.swizzle_size)

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one tile's A and B K-slices, read by the one consumer group that owns the tile.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # One staging buffer per group: a group's epilogue never waits for the other group's TMA store.
        sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, bm, bn])
        self.annotate_layout(sc, self.cuda.shared_layout([CONSUMERS, bm, bn]))
        # Each stage is released by the one group that read it: one arrival.
        pipe = SharedRing(self.num_stages, num_consumers=1)

        # Producer warp: the block's tiles in order, so tile i's stages go to group i % 2.
        with self.thread_group(thread_begin=PRODUCER, num_threads=32):
            for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
                tile_m, tile_n = raster.tile_of(tile)
                offset_m: int32 = bm * tile_m
                offset_n: int32 = bn * tile_n
                for offset_k in range(0, k_size, bk):
                    stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                    full = pipe.full[stage]
                    self.tma.global_to_shared(src=ga, dst=sa[stage], offsets=[offset_m, offset_k], mbarrier=full)
                    self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[offset_n, offset_k], mbarrier=full)

        self.consumer(0, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)
        self.consumer(1, pipe, raster, sa, sb, sc, gc, k_size, n_size % 8 == 0)

    def consumer(
        self,
        group: int,
        pipe: SharedRing,
        raster: TileRaster,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        gc: GlobalTensor,
        k_size: int,
        tma_store: bool,
    ):
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            k_tiles = cdiv(k_size, self.block_k)
            for tile in range(self.blockIdx.x, raster.num_tiles, self.gridDim.x):
                # The block's tiles alternate between the groups; the other group's stages are stepped over.
                if (tile - self.blockIdx.x) // self.gridDim.x % CONSUMERS != group:
                    pipe.skip(k_tiles)
                else:
                    self.compute_tile(group, tile, pipe, raster, sa, sb, sc, gc, k_tiles, tma_store)
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0)

    def compute_tile(
        self,
        group: int,
        tile: int32,
        pipe: SharedRing,
        raster: TileRaster,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        gc: GlobalTensor,
        k_tiles: int32,
        tma_store: bool,
    ):
        """One tile of this group: the K loop on its stages, then the epilogue through its staging buffer."""
        tile_m, tile_n = raster.tile_of(tile)
        acc = self.register_tensor(dtype=float32, shape=[self.block_m, self.block_n], init=0.0)
        # Wait for the turn: the other group has waited on every stage of the block's previous tile. Without
        # it, this group could wait on a stage two fills ahead of what has landed, and an mbarrier's phase
        # parity cannot tell those apart: the wait would pass on the older phase and read the stage too early.
        if tile != self.blockIdx.x:
            barrier_sync(TURN + group, TURN_THREADS)
        for k_tile in range(k_tiles):
            stage = pipe.consumer_acquire()
            self.wgmma.fence()
            self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(1)
            if k_tile > 0:
                pipe.consumer_release()
        # Every stage of this tile has landed: pass the turn (if the block has a next tile, which is the other
        # group's). The other group's MMAs start while this group drains its own and runs the epilogue.
        if tile + self.gridDim.x < raster.num_tiles:
            barrier_arrive(TURN + 1 - group, TURN_THREADS)
        self.wgmma.wait_group(0)
        pipe.consumer_release()

        offsets = [self.block_m * tile_m, self.block_n * tile_n]
        if not tma_store:
            self.store_global(gc, self.cast(acc, dtype=float16), offsets=offsets)
        else:
            # This group's previous TMA store must have read the staging buffer before it is overwritten;
            # the warp that committed that store waits (bulk groups belong to the issuing thread).
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0, read=True)
            self.sync()
            self.store_shared(sc[group], self.cast(acc, dtype=float16))
            self.fence.proxy_async(space="shared")
            self.sync()
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.shared_to_global(sc[group], gc, offsets=offsets)
                self.tma.commit_group()
