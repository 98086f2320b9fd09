"""The Hopper facts the data core computes with: an H100 SXM or an H200 (compute capability 9.0, 132 SMs).

Per SM (CUDA C Programming Guide, compute capability 9.0): 65,536 32-bit registers, allocated per warp in units of
256; 228 KB of shared memory, of which a block may use 227 KB and 1 KB is reserved per resident block; 2,048 threads;
32 blocks. Dense fp16 on the tensor cores: NVIDIA's 989.4 TFLOPS at the 1830 MHz boost clock over 132 SMs is 4096 FLOP
per clock per SM.
"""

from __future__ import annotations

SM_COUNT = 132  # H100 SXM and H200; a results file's gpu.sm_count wins where there is one
REGISTERS_PER_SM = 65536
REGISTER_UNIT_PER_WARP = 256
SHARED_BYTES_PER_SM = 228 * 1024
SHARED_RESERVED_PER_BLOCK = 1024
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
DENSE_FP16_FLOP_PER_CLOCK_PER_SM = 4096


def peak_tflops(sm_count: int, sm_clock_mhz: float) -> float:
    """Dense fp16 tensor-core peak at a clock: SMs x 4096 FLOP per clock per SM."""
    return sm_count * DENSE_FP16_FLOP_PER_CLOCK_PER_SM * sm_clock_mhz * 1e6 / 1e12
