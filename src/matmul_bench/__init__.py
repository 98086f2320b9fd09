"""The tooling behind the site's numbers, with one command line (``python -m matmul_bench``, see :mod:`.cli`).

Nothing here is part of what a reader runs to learn: the kernels and their helpers stay in
examples/hopper_matmul/. By concern:

- :mod:`.cli`: the commands (record, quick, plan, tryit, buildcheck).
- :mod:`.plan`: a benchmark's options, its plan (runs of implementations at a shape) and its estimate.
- :mod:`.runner`: probe, build and check, fresh worker processes per run, aggregate, record.
- :mod:`.worker`: inside one worker process: check, then time in interleaved rounds.
- :mod:`.aggregate`: samples to rows: medians, paired ratios and their intervals.
- :mod:`.machine`: GPU, driver, software, git, and NVML sampling of clock and power.
- :mod:`.ncu`: Nsight Compute counters.
- :mod:`.peers`: the optional peers (Triton's templates via torch.compile, QuACK), built on the GPU.
- :mod:`.fake`: a stand-in GPU for the CPU tests of the protocol.
- :mod:`.prebuild`: kernels built ahead of time in parallel processes.
- :mod:`.buildcheck`: kernels built for sm_90a on a machine with no GPU, and what ptxas reports.
- :mod:`.tryit`: the chapters' Try it edits, applied to copies, built and checked.
- :mod:`.kernels`: where the kernels live and how child processes import them.
"""
