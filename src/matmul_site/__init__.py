"""The site, torch-free: the generator of docs/_generated/ (:mod:`.render`), the charts (:mod:`.charts`, matplotlib:
the docs extra) and the Sphinx extensions (:mod:`.sphinx`). It reads the data core and never imports the benchmark.
"""
