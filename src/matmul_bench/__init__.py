"""The tooling behind the site's numbers, one command line: ``python -m matmul_bench`` (see :mod:`.cli`).

By concern: :mod:`.plan` (options and plan), :mod:`.runner` (a record), :mod:`.jobs` and :mod:`.worker` (fresh
processes; :mod:`.protocol` types their jobs and answers and the raw-sample file), :mod:`.aggregate` (samples to
runs; :mod:`matmul_data.replicate` merges runs into figures), :mod:`.machine`, :mod:`.ncu`, :mod:`.peers`,
:mod:`.baseline`, :mod:`.buildcheck`, :mod:`.tryit`, and :mod:`.kernels`: the one kernel loader.
"""
