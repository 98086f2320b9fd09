"""The benchmark behind ``benchmark.py``, by concern.

- :mod:`bench.plan`: the command line, the plan (runs of implementations at a shape) and its estimate.
- :mod:`bench.runner`: probe, build and check, fresh worker processes per section, aggregate, record.
- :mod:`bench.worker`: inside one worker process: check, then time in interleaved rounds.
- :mod:`bench.aggregate`: samples to rows: medians, paired ratios and their intervals.
- :mod:`bench.machine`: GPU, driver, software, git, and NVML sampling of clock and power.
- :mod:`bench.ncu`: Nsight Compute counters for the ladder.
- :mod:`bench.fake`: a stand-in GPU for the CPU tests of the protocol.
"""
