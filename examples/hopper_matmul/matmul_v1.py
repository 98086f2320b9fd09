# What changed from V0: only the compute step. mma.sync needs both tiles copied
# from shared memory into registers (ldmatrix) before every multiply, which costs
# registers and issue slots. Hopper's WGMMA lets a warp group multiply tiles that
# stay in shared memory, read through descriptors, and runs asynchronously; the
# tile grows to 128 x 128 (Tilus refuses that tile for mma.sync on 4 warps).
# Still one stage: inside a block, loading and computing take turns.

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv

import common

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "WGMMA from shared memory"


# The configuration this chapter measured, chosen from the autotune lists below at 8192³ on the H200. The
# benchmark, the GPU tests and the pages pin it, so every process builds this one kernel.
TUNED = {"block_m": 128, "block_n": 128, "block_k": 64}


# Output tile per block: WGMMA leaves operands in shared memory, so the tile can grow.
@tilus.autotune("block_m, block_n", [[128, 128], [64, 256]])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [64])
class MatmulV1(tilus.Script):
    def __init__(self, block_m: int, block_n: int, block_k: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k

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
        sa = self.shared_tensor(dtype=float16, shape=[bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[bn, bk])
        # fp32 accumulator in registers, spread over the threads of the block.
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        # One mbarrier completes when both tiles of a K step have arrived.
        loaded = self.mbarrier.alloc(counts=[1])
        phase: uint32 = 0

        for offset_k in range(0, k_size, bk):
            # One thread tells the barrier how many bytes TMA will deliver.
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx(loaded[0], transaction_bytes=sa.nbytes + sb.nbytes)
            # Warp 0 enters; Tilus issues each copy from one lane picked by elect.sync. TMA does the address math.
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.global_to_shared(src=ga, dst=sa, offsets=[offset_m, offset_k], mbarrier=loaded[0])
                self.tma.global_to_shared(src=gb, dst=sb, offsets=[offset_n, offset_k], mbarrier=loaded[0])
            # Everyone waits for the bytes; the barrier's phase bit flips once per use.
            self.mbarrier.wait(loaded[0], phase=phase)
            phase ^= 1
            # WGMMA reads both tiles straight from shared memory: no copy through registers. The tiles
            # came by TMA, so the mbarrier wait above already made them visible to the MMA.
            self.wgmma.fence()  # order earlier register accesses (acc) before the async MMA reads and writes acc
            self.wgmma.mma(sa, sb.transpose(), acc)  # C += A @ B^T, issued by the whole warp group
            self.wgmma.commit_group()  # close the batch of MMAs just issued
            self.wgmma.wait_group(0)  # and wait until it has finished reading shared memory
            # Kept from V0. PTX promises only that each warp's wait_group(0) covers its own part of the MMA, so by
            # PTX alone this sync is what makes every warp done with the tiles before they are re-armed and
            # overwritten. On the hardware the warp group's MMA appears to finish as a whole: the sync is conservative.
            self.sync()

        # Round to fp16 and store; rows and columns past M and N are masked off.
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])


def main() -> None:
    common.run_main(MatmulV1(), TITLE)


if __name__ == "__main__":
    main()
