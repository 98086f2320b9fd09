"""The data core, torch-free and docutils-free: imported by name by the benchmark, the site and the charts.

- :mod:`matmul_data.paths`: where the repository's pieces live, and which results file to use.
- :mod:`matmul_data.versions`: the kernel versions, found from ``examples/hopper_matmul/matmul_vN.py``, and labels.
- :mod:`matmul_data.results`: the results file: loading, validation, merging, atomic writes (schema in
  :mod:`matmul_data.schema`, statistics in :mod:`matmul_data.stats`).
- :mod:`matmul_data.budget`: the sm_90a build record (typed in :mod:`matmul_data.builds`), and what fits on an SM.
- :mod:`matmul_data.check_log`: the V9 development check's log, typed.
"""
