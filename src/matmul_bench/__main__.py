"""``python -m matmul_bench``: see :mod:`matmul_bench.cli`."""

import sys

from matmul_bench.cli import main

sys.exit(main())
