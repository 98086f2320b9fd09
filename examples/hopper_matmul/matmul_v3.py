# What changed from V2: the warps split into roles. In V2 the same warps issued
# the TMA loads and the MMAs, so a load could only be issued between two MMA
# steps, and every step ended with a block-wide sync. Now one producer warp only
# issues TMA and one consumer warp group only issues WGMMA. They meet at two
# barriers per stage: "full" (the tiles landed) and "empty" (the MMA has read
# them), so each side runs ahead as far as the ring allows, with no block sync.

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv

import common

# The chapter's title: its page, the charts, the results file and main() all read this one string.
TITLE = "warp specialization"


# The configuration this chapter measured, chosen from the autotune lists below at 8192³ on the H200. The
# benchmark, the GPU tests and the pages pin it, so every process builds this one kernel.
TUNED = {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3}


# Output tile per block: WGMMA leaves operands in shared memory, so the tile can grow.
@tilus.autotune("block_m, block_n", [[128, 128], [64, 256]])
# 64 fp16 = 128-byte rows: TMA's widest swizzle, so shared-memory reads avoid bank conflicts.
@tilus.autotune("block_k", [64])
# Stages in the ring: more hides more latency, each costs (block_m + block_n) * block_k * 2 bytes.
@tilus.autotune("num_stages", [3, 4])
class MatmulV3(tilus.Script):
    def __init__(self, block_m: int, block_n: int, block_k: int, num_stages: int):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
        self.num_stages = num_stages

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        # One thread block per output tile; ragged edges get a partial tile.
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        # Warps 0-3 form the consumer warp group (WGMMA needs an aligned group of 4); warp 4 is the producer.
        self.attrs.warps = 5
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y

        # The shapes give TMA its bounds: reads past M, N or K come back as zeros.
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        # A ring of num_stages buffers per operand, indexed by stage.
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, bn, bk])
        # Per stage: "full" completes when TMA has delivered the tiles, "empty" when all 128 consumer threads read them.
        full = self.mbarrier.alloc(counts=[1 for _ in range(self.num_stages)])
        empty = self.mbarrier.alloc(counts=[128 for _ in range(self.num_stages)])

        # Producer warp: only issues TMA, refilling each stage as soon as the consumer frees it.
        with self.thread_group(thread_begin=128, num_threads=32):
            load_stage: int32 = 0
            # Start on the phase "before" the barrier's first: the ring begins empty, so the first lap does not wait.
            load_phase: uint32 = 1
            for offset_k in range(0, k_size, bk):
                # Wait until the consumer has finished reading this stage's previous tiles.
                self.mbarrier.wait(empty[load_stage], phase=load_phase)
                # One thread tells the barrier how many bytes TMA will deliver.
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(
                        full[load_stage], transaction_bytes=sa[load_stage].nbytes + sb[load_stage].nbytes
                    )
                # The producer warp calls the copy, Tilus issues it from one elected lane; TMA does the address math.
                self.tma.global_to_shared(
                    src=ga, dst=sa[load_stage], offsets=[offset_m, offset_k], mbarrier=full[load_stage]
                )
                self.tma.global_to_shared(
                    src=gb, dst=sb[load_stage], offsets=[offset_n, offset_k], mbarrier=full[load_stage]
                )
                load_stage = (load_stage + 1) % self.num_stages
                load_phase = load_phase ^ (load_stage == 0)

        # Consumer warp group: only issues WGMMA and owns the accumulator.
        with self.thread_group(thread_begin=0, num_threads=128):
            # fp32 accumulator in registers, spread over the threads of the warp group.
            acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
            stage: int32 = 0
            phase: uint32 = 0
            for _ in range(cdiv(k_size, bk)):
                # Wait only for this stage's bytes; the producer keeps loading later stages meanwhile.
                self.mbarrier.wait(full[stage], phase=phase)
                # WGMMA reads both tiles straight from shared memory: no copy through registers. The tiles
                # came by TMA, so the wait on full[stage] already made them visible to the MMA.
                self.wgmma.fence()  # order earlier register accesses (acc) before the async MMA reads and writes acc
                self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)  # C += A @ B^T, issued by the whole warp group
                self.wgmma.commit_group()  # close the batch of MMAs just issued
                self.wgmma.wait_group(0)  # and wait until it has finished reading shared memory
                # Hand the stage back to the producer: no block-wide sync needed.
                self.mbarrier.arrive(empty[stage])
                stage = (stage + 1) % self.num_stages
                phase = phase ^ (stage == 0)

            # Round to fp16 and store; rows and columns past M and N are masked off.
            gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
            self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])


def main() -> None:
    common.run_main(MatmulV3(), TITLE)


if __name__ == "__main__":
    main()
