"""The site's plumbing, torch-free: the results file, the version registry and labels, charts, Sphinx extensions.

Everything outside the kernel folder imports this package by name (``from matmul_site import results``);
``pip install -e .`` (every nox session does it) makes it importable. Modules:

- :mod:`matmul_site.paths`: where the repository's pieces live, and which results file to use.
- :mod:`matmul_site.versions`: the kernel versions, found from ``examples/hopper_matmul/matmul_vN.py``, and labels.
- :mod:`matmul_site.results`: the results file's schema, loading, validation, merging and atomic writes.
- :mod:`matmul_site.charts`: the charts (matplotlib; needs the docs extra).
- :mod:`matmul_site.sphinx`: the Sphinx extensions (docutils work only).
"""
