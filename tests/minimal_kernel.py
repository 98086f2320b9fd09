"""The smallest TMA + WGMMA matmul: one stage, one warp group. The foundation tests build and run it."""

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv


class MinimalTmaWgmma(tilus.Script):
    def __init__(self, block_m: int = 128, block_n: int = 128, block_k: int = 64):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = 4
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[n_size, k_size])
        sa = self.shared_tensor(dtype=float16, shape=[bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[bn, bk])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        loaded = self.mbarrier.alloc(counts=[1])
        phase: uint32 = 0
        for offset_k in range(0, k_size, bk):
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx(loaded[0], transaction_bytes=sa.nbytes + sb.nbytes)
            with self.thread_group(thread_begin=0, num_threads=32):
                self.tma.global_to_shared(src=ga, dst=sa, offsets=[offset_m, offset_k], mbarrier=loaded[0])
                self.tma.global_to_shared(src=gb, dst=sb, offsets=[offset_n, offset_k], mbarrier=loaded[0])
            self.mbarrier.wait(loaded[0], phase=phase)
            phase ^= 1
            self.wgmma.fence()
            self.wgmma.mma(sa, sb.transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(0)
            self.sync()
        # Freed on purpose: before the barrier fix, the mbarrier was placed in these bytes.
        self.free_shared(sa)
        self.free_shared(sb)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])
