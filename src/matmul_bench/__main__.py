"""``python -m matmul_bench``: see :mod:`matmul_bench.cli`."""

from matmul_bench.cli import main

raise SystemExit(main())
