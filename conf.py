"""Sphinx configuration. The build runs `sphinx-build -c . docs <out>` from the repository root."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "plots"), str(ROOT / "examples" / "hopper_matmul")]

project = "Fast matmul on Hopper with Tilus"
author = "The hopper-matmul-tutorial authors"
copyright = "2026, " + author

extensions = [
    "sphinx.ext.mathjax",
    "sphinx_copybutton",
    "matplotlib.sphinxext.plot_directive",
]

root_doc = "index"
exclude_patterns = ["_build"]
nitpicky = True
language = "en"

# Theme: furo gives search, light/dark mode, prev/next links and a readable code font.
html_theme = "furo"
html_title = project
html_static_path: list[str] = []

# Charts: plot scripts live in the top-level plots/ and read plots/results/*.json.
plot_basedir = str(ROOT / "plots")
plot_formats = [("svg", 100)]
plot_html_show_source_link = False
plot_html_show_formats = False
plot_include_source = False
plot_rcparams = {"svg.hashsalt": "hopper-matmul", "svg.fonttype": "none"}

# Copy buttons skip prompts so that pasted commands run as they are.
copybutton_prompt_text = r"\$ |>>> "
copybutton_prompt_is_regexp = True
