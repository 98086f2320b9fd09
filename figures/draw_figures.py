"""Redraw every diagram of the tutorial: `python figures/draw_figures.py [--out DIR] [--png DIR] [NAME ...]`.

Each figures/<name>.py draws figures/<name>.svg; the list of names lives in figures/catalog.py.
Needs only matplotlib and this project (its chart kit, matmul_site.chartkit): no GPU, no torch, no tilus.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import style
from catalog import FIGURE_NAMES

HERE = Path(__file__).resolve().parent


def draw_all(out: Path, png: Path | None = None, names: tuple[str, ...] = FIGURE_NAMES) -> list[Path]:
    """Write <out>/<name>.svg for every name (and PNG previews into `png`); return the SVG paths."""
    unknown = sorted(set(names) - set(FIGURE_NAMES))
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; known: {', '.join(FIGURE_NAMES)}")
    written = []
    for name in names:
        module = importlib.import_module(name)
        preview = png / f"{name}.png" if png is not None else None
        written.append(style.render(module.draw, out / f"{name}.svg", preview))
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"figures to draw (default: all of {', '.join(FIGURE_NAMES)})")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the SVGs (default: figures/)")
    parser.add_argument("--png", type=Path, default=None, help="also write PNG previews (dark background) here")
    args = parser.parse_args(argv)
    if args.png is not None:
        args.png.mkdir(parents=True, exist_ok=True)
    for path in draw_all(args.out, args.png, tuple(args.names) or FIGURE_NAMES):
        print(path)


if __name__ == "__main__":
    main()
