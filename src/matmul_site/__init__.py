"""The site: the generator of docs/_generated/, the charts, and the Sphinx extensions (torch-free).

It reads the data core (:mod:`matmul_data`) and never imports the benchmark. Modules:

- :mod:`matmul_site.charts`: the charts (matplotlib; needs the docs extra).
- :mod:`matmul_site.sphinx`: the Sphinx extensions (docutils work only).
"""
