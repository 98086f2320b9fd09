# What changed from V1: shared memory becomes a ring of num_stages tile buffers,
# each with its own mbarrier. In V1 a block issued no MMA while its K-tile
# travelled from DRAM, and no load while it multiplied (only other blocks on the
# SM filled those gaps). Now the loads of the next num_stages - 1 K-tiles are in
# flight while the current one is multiplied, inside the block itself.

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv

import common

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "a multi-stage pipeline"


# The configuration this chapter measured, chosen from the autotune lists below at 8192³ on the H200. The
# benchmark, the GPU tests and the pages pin it, so every process builds this one kernel.
TUNED = {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3}


# Output tile per block: WGMMA leaves operands in shared memory, so the tile can grow.
@tilus.autotune("block_m, block_n", [[128, 128], [64, 256]])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [64])
# Stages in the ring: more hides more latency, each costs (block_m + block_n) * block_k * 2 bytes.
@tilus.autotune("num_stages", [3, 4])
class MatmulV2(tilus.Script):
    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.num_stages = num_stages

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        # One thread block per output tile; ragged edges get a partial tile.
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        # Four warps: 128 threads, one warp group.
        self.attrs.warps = 4
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        # A ring of num_stages buffers per operand, indexed by stage.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # fp32 accumulator in registers, spread over the threads of the block.
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        # One mbarrier per stage completes when both tiles of that stage have arrived.
        loaded = self.mbarrier.alloc(counts=[1 for _ in range(self.num_stages)])

        # Prologue: start the loads of the first num_stages - 1 K-tiles.
        for s in range(self.num_stages - 1):
            if s * bk < k_size:
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(loaded[s], transaction_bytes=sa[s].nbytes + sb[s].nbytes)
                with self.thread_group(thread_begin=0, num_threads=32):
                    self.tma.global_to_shared(src=ga, dst=sa[s], offsets=[offset_m, s * bk], mbarrier=loaded[s])
                    self.tma.global_to_shared(src=gb, dst=sb[s], offsets=[offset_n, s * bk], mbarrier=loaded[s])

        # The stage to compute next and the phase its barrier is in; the phase flips each lap of the ring.
        stage: int32 = 0
        phase: uint32 = 0
        for offset_k in range(0, k_size, bk):
            # Refill the stage freed by the previous step (on the first, the one the prologue left empty)
            # with the K-tile num_stages - 1 steps ahead.
            ahead_k = offset_k + (self.num_stages - 1) * bk
            ahead = (stage + self.num_stages - 1) % self.num_stages
            if ahead_k < k_size:
                # One thread tells the barrier how many bytes TMA will deliver.
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(
                        loaded[ahead], transaction_bytes=sa[ahead].nbytes + sb[ahead].nbytes
                    )
                # Warp 0 enters; Tilus issues each copy from one lane picked by elect.sync. TMA does the address math.
                with self.thread_group(thread_begin=0, num_threads=32):
                    self.tma.global_to_shared(
                        src=ga, dst=sa[ahead], offsets=[offset_m, ahead_k], mbarrier=loaded[ahead]
                    )
                    self.tma.global_to_shared(
                        src=gb, dst=sb[ahead], offsets=[offset_n, ahead_k], mbarrier=loaded[ahead]
                    )
            # Wait only for this stage's bytes; later stages keep loading meanwhile.
            self.mbarrier.wait(loaded[stage], phase=phase)
            # WGMMA reads both tiles straight from shared memory: no copy through registers. The tiles
            # came by TMA, so the mbarrier wait above already made them visible to the MMA.
            self.wgmma.fence()  # order earlier register accesses (acc) before the async MMA reads and writes acc
            self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)  # C += A @ B^T, issued by the whole warp group
            self.wgmma.commit_group()  # close the batch of MMAs just issued
            self.wgmma.wait_group(0)  # and wait until it has finished reading shared memory
            # Kept from V1: by PTX's rules alone it makes every warp done with this stage before the refill;
            # the hardware appears to finish the warp group's MMA as a whole, so it is conservative (see V1's page).
            self.sync()
            stage = (stage + 1) % self.num_stages
            phase = phase ^ (stage == 0)

        # Round to fp16 and store; rows and columns past M and N are masked off.
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])


def main() -> None:
    common.run_main(MatmulV2(), TITLE)


if __name__ == "__main__":
    main()
