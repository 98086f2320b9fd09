# Experiment (not a chapter version): V7 with a stream-K tail, the attempt after V7.
# `python -m matmul_bench record --steps "v7 round 2"` times it (specs/steps.py);
# `python -m matmul_bench check stream-k` checks it.
# Caveats: the spin-wait on a flag assumes all 132 blocks are resident at once (one per SM; no cooperative launch),
# and Tilus emits bar.cta.sync, st.release and ld.acquire as inline asm without a "memory" clobber, so the
# source alone does not pin the order of the plain partial-sum loads and stores around them (SASS not checked).
# Tilus 0.2.0 findings while writing it:
# - global_tensor allocates nbits bytes per element (cdiv(size * nbits * 8, 8)), 8x too much for fp32: this
#   workspace of 34.6 MB takes 277 MB of Tilus's cached CUDA workspace.
# - load_global(..., out=acc) inside an `if` declares a new register array there instead of writing acc.
# - Loading the partial sums into the WGMMA accumulator (acc = load_global(...) before the MMAs) makes ptxas
#   serialise every WGMMA of the kernel (C7514), so the two halves meet in global memory after the MMAs instead.
# - hidet's barrier_arrive prints barrier.sync (experiments/v7_variants.py registers a barrier.arrive primitive).
# What it changes from V6 (the second change is V7's):
# - The last wave is split along K (stream-K, streamk.py). V6 hands out whole tiles round-robin, so when the
#   tile count is not a multiple of the SM count the last wave leaves SMs idle (8192^3: 2048 = 15 x 132 + 68).
#   Now only the tiles before the last full wave go round-robin; the rest are cut into equal, contiguous runs of
#   K-tiles, one per block. A tile cut between two blocks is finished through a workspace: the block with its
#   last K-tiles writes fp32 partial sums and raises a flag; the block with its first K-tiles adds them and stores C.
# - C is staged in four 64-column chunks in TMA's 128-byte swizzle instead of plain 512-byte rows, so the
#   consumers' shared-memory writes have no bank conflicts; four TMA stores take the chunks out.

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, float16, float32, int32
from tilus.utils import cdiv

from matmul_data.loader import load

matmul_v7 = load("matmul_v7")
CHUNK, CONSUMERS, PRODUCER = matmul_v7.CHUNK, matmul_v7.CONSUMERS, matmul_v7.PRODUCER  # warp roles, staging chunks
Pipeline, TileRaster = load("pipeline").Pipeline, load("raster").TileRaster
StreamKSchedule = load("streamk").StreamKSchedule

FIX_UP_ROWS = 16  # rows of a shared tile summed at a time: 32 fp32 registers per thread per operand


# Stream-K on (the experiment) or off (V7's round-robin tail, to time the split on its own).
@tilus.autotune("stream_k", [True])
class MatmulV7StreamK(matmul_v7.MatmulV7):
    """V7 (its tile, stages, raster groups and staging chunks) with its last wave split along K."""

    # Tilus's autotune decorator adds to the class's `_autotune_space`, which a subclass shares with its parent:
    # a copy of V7's space, so that the knob above is this class's alone.
    _autotune_space = dict(matmul_v7.MatmulV7._autotune_space)

    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int, swizzle_size: int, stream_k: bool):
        super().__init__(block_m, block_n, block_k, num_stages, swizzle_size)
        self.stream_k = stream_k

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, gm = self.block_m, self.block_n, self.block_k, self.group_m
        # One block per SM, each walking its pieces; blocks left without one just exit.
        self.attrs.blocks = self.num_sms
        # Warps 0-7: two consumer warp groups; warp 8: the producer.
        self.attrs.warps = CONSUMERS * 4 + 1
        raster = TileRaster(cdiv(m_size, bm), cdiv(n_size, bn), self.swizzle_size)
        # With stream_k off, every tile is whole: the schedule degenerates to V6's round-robin.
        num_k_tiles = cdiv(k_size, bk)
        schedule = StreamKSchedule(raster.num_tiles, num_k_tiles, self.num_sms, self.stream_k)

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros, writes are clipped.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        # Per stage: one A slab per consumer warp group, one B tile for both.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, CONSUMERS, gm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # Staging chunks for C, 64 columns each: TMA's 128-byte swizzle spreads a chunk's rows over all banks.
        sc = self.shared_tensor(dtype=float16, shape=[CONSUMERS, bn // CHUNK, gm, CHUNK])
        # Stream-K workspace: a slot of fp32 partial sums per block, and a flag per block and consumer group
        # (zero at launch; the block that reads a slot sets its flag back to zero, as Tilus requires).
        partials = self.global_tensor(dtype=float32, shape=[self.num_sms, 2, CONSUMERS, gm, bn], requires_clean=False)
        flags = self.global_tensor(dtype=int32, shape=[self.num_sms, CONSUMERS], requires_clean=True)
        # Full/empty barriers per stage; stage indices and phases carry on from one piece to the next.
        pipe = Pipeline(self.num_stages, num_consumers=CONSUMERS)

        # Producer warp: walks the same pieces, running up to num_stages K-tiles ahead, across piece boundaries.
        with self.thread_group(thread_begin=PRODUCER, num_threads=32):
            schedule.start(self.blockIdx.x)
            while schedule.more():
                tile_m, tile_n = raster.tile_of(schedule.tile)
                offset_m: int32 = bm * tile_m
                offset_n: int32 = bn * tile_n
                for k_tile in range(schedule.k_first, schedule.k_stop, 1):
                    offset_k: int32 = bk * k_tile
                    # Wait for a free stage and arm its full barrier with the bytes TMA will bring.
                    stage = pipe.producer_acquire(transaction_bytes=sa[0].nbytes + sb[0].nbytes)
                    # Two A slabs and the shared B tile; TMA completes full[stage] when all three have landed.
                    full = pipe.full[stage]
                    self.tma.global_to_shared(src=ga, dst=sa[stage, 0], offsets=[offset_m, offset_k], mbarrier=full)
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, 1], offsets=[offset_m + gm, offset_k], mbarrier=full
                    )
                    self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[offset_n, offset_k], mbarrier=full)
                schedule.advance()

        # TMA addresses global rows in 16-byte steps: with N % 8 != 0, C's rows are stored from registers.
        # Consumer warp groups: the same code, each on its own rows.
        self.consumer(0, pipe, raster, schedule, sa, sb, sc, gc, partials, flags, n_size % 8 == 0)
        self.consumer(1, pipe, raster, schedule, sa, sb, sc, gc, partials, flags, n_size % 8 == 0)

    def consumer(
        self,
        group: int,
        pipe: Pipeline,
        raster: TileRaster,
        schedule: StreamKSchedule,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        gc: GlobalTensor,
        partials: GlobalTensor,
        flags: GlobalTensor,
        tma_store: bool,
    ):
        with self.thread_group(thread_begin=group * 128, num_threads=128):
            schedule.start(self.blockIdx.x)
            while schedule.more():
                tile_m, tile_n = raster.tile_of(schedule.tile)
                # This group's fp32 accumulator (group_m x block_n), zeroed for every piece.
                acc = self.register_tensor(dtype=float32, shape=[self.group_m, self.block_n], init=0.0)
                self.mainloop(group, pipe, schedule, sa, sb, acc)
                if not schedule.split():
                    self.epilogue(group, acc, tile_m, tile_n, sc, gc, tma_store)
                else:
                    self.fix_up(group, acc, schedule, tile_m, tile_n, gc, partials, flags)
                schedule.advance()
            # The block may not exit while TMA still reads its shared memory: wait (without read=True)
            # until its last store has completed, writes to global memory included.
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0)

    def mainloop(
        self,
        group: int,
        pipe: Pipeline,
        schedule: StreamKSchedule,
        sa: SharedTensor,
        sb: SharedTensor,
        acc: RegisterTensor,
    ):
        """Accumulate K-tiles [k_first, k_stop) of the current piece into this group's acc."""
        for k_tile in range(schedule.k_first, schedule.k_stop, 1):
            # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
            stage = pipe.consumer_acquire()
            self.wgmma.fence()  # order the register accesses of acc before the async MMA reads it
            self.wgmma.mma(sa[stage, group], sb[stage].transpose(), acc)  # own A slab x shared B tile
            self.wgmma.commit_group()
            # Keep this K-tile's MMA in flight; only the previous K-tile's must have retired...
            self.wgmma.wait_group(1)
            if k_tile > schedule.k_first:
                pipe.consumer_release()  # ...so its stage (the oldest held) goes back to the producer
        # Drain the last MMA before reading acc, and release its stage.
        self.wgmma.wait_group(0)
        pipe.consumer_release()

    def fix_up(
        self,
        group: int,
        acc: RegisterTensor,
        schedule: StreamKSchedule,
        tile_m: int32,
        tile_n: int32,
        gc: GlobalTensor,
        partials: GlobalTensor,
        flags: GlobalTensor,
    ):
        """Finish a tile that two blocks share: the one with its last K-tiles hands over, the other stores C."""
        if schedule.k_first > 0:
            # The last K-tiles, computed first thing in this block's range: publish the fp32 partial sums.
            self.store_global(partials, acc, offsets=[self.blockIdx.x, 0, group, 0, 0], dims=[3, 4])
            self.sync()  # all 128 threads' stores come before the flag (the release orders them GPU-wide)
            self.release_semaphore(flags[self.blockIdx.x, group].item_ptr(), value=1)
        else:
            # The first K-tiles, last thing in this block's range. Adding the other block's sums to acc in
            # registers would need a second 128-register tile, so both halves meet in global memory instead.
            self.store_global(partials, acc, offsets=[self.blockIdx.x, 1, group, 0, 0], dims=[3, 4])
            flag = flags[self.blockIdx.x + 1, group].item_ptr()
            self.lock_semaphore(flag, value=1)  # normally up long ago; ends with a sync of the group
            offset_m = self.block_m * tile_m + group * self.group_m
            for rows in range(0, self.group_m, FIX_UP_ROWS):
                mine = self.load_global(
                    partials, offsets=[self.blockIdx.x, 1, group, rows, 0], shape=[FIX_UP_ROWS, self.block_n],
                    dims=[3, 4],
                )  # fmt: skip
                theirs = self.load_global(
                    partials, offsets=[self.blockIdx.x + 1, 0, group, rows, 0], shape=[FIX_UP_ROWS, self.block_n],
                    dims=[3, 4],
                )  # fmt: skip
                total = self.cast(self.add(mine, theirs), dtype=float16)
                self.store_global(gc, total, offsets=[offset_m + rows, self.block_n * tile_n])
            self.sync()  # every thread has read the slot before the flag goes back to zero
            self.release_semaphore(flag, value=0)

    def epilogue(
        self,
        group: int,
        acc: RegisterTensor,
        tile_m: int32,
        tile_n: int32,
        sc: SharedTensor,
        gc: GlobalTensor,
        tma_store: bool,
    ):
        offset_m = self.block_m * tile_m + group * self.group_m
        offset_n = self.block_n * tile_n
        if not tma_store:
            self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])
        else:
            # The previous tile's TMA stores must have finished reading the staging chunks...
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.wait_group(0, read=True)
            self.sync()  # ...before any thread of the group overwrites them
            # The chunks seen as one group_m x block_n tile: chunk j holds columns [64 j, 64 j + 64).
            tile_view = self.reshape_shared(sc.permute([0, 2, 1, 3]), [CONSUMERS, self.group_m, self.block_n])
            self.store_shared(tile_view[group], self.cast(acc, dtype=float16))
            self.fence.proxy_async(space="shared")  # make the generic-proxy writes visible to TMA
            self.sync()  # every chunk is in shared memory
            # One warp hands the chunks to TMA and the group returns to MMAs; the stores drain meanwhile.
            with self.thread_group(thread_begin=0, num_threads=32):
                for chunk in range(self.block_n // CHUNK):
                    self.tma.shared_to_global(sc[group, chunk], gc, offsets=[offset_m, offset_n + chunk * CHUNK])
                self.tma.commit_group()
