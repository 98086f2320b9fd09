"""Sphinx extensions: docutils work only (numbers and words come from matmul_site and the pages)."""
