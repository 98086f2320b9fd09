"""``.. tile-choices:: 2048 5120 3000x5000x4096``: V8's tile model at each named problem, as a table.

For each shape: V7's one tile (128 x 256), its tiles, waves and wave efficiency; the tile the model picks,
with the same three; and the model's predicted speed-up. All of it is the model's arithmetic
(``examples/hopper_matmul/tile_model.py``, plain Python, imported by path); no measurement and no typed number.
The shapes are the page's input: which problems to show, not results.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from matmul_bench.kernels import import_spec
from matmul_data import paths
from matmul_site import facts, numfmt


def tile_model() -> ModuleType:
    """The kernel folder's tile_model.py, imported by its path (the folder is not a package)."""
    return import_spec(paths.KERNEL_DIR / "tile_model.py", "tile-model")


def parse_shape(text: str) -> tuple[int, int, int]:
    """``4096`` for 4096³, or ``MxNxK``: a shape as facts name it."""
    if not re.fullmatch(facts.SHAPE, text):
        raise ValueError(f"{text!r} is not a shape: write 4096 for 4096^3 or MxNxK")
    return facts.shape_of(text)


def waves(e: Any) -> str:
    """A tile's wave arithmetic on one problem: tiles, waves, rounds, the share of tile slots used, and how wide
    its last column of tiles is where block_n does not divide N (the model's edge term charges it)."""
    rounds = f"{e.rounds} round{'s' if e.rounds > 1 else ''}"
    edge = f"; last column {e.n % e.tile.block_n} of {e.tile.block_n} wide" if e.edge_empty else ""
    return f"{e.tiles} tiles, {e.waves:.2f} waves in {rounds}: {e.wave_efficiency:.2f} of the slots{edge}"


def rows(shapes: list[tuple[int, int, int]]) -> list[list[str]]:
    """One row per shape: shape, V7's tile arithmetic, the model's pick and its arithmetic, the predicted gain."""
    model = tile_model()
    out = []
    for m, n, k in shapes:
        # H100 SXM and H200, the machines the site's numbers come from: 132 SMs.
        fixed = model.estimate(model.REFERENCE, m, n, k, model.H100_SMS)
        chosen = model.estimate(model.choose(m, n, k, model.H100_SMS), m, n, k, model.H100_SMS)
        out.append([numfmt.shape_text({"m": m, "n": n, "k": k}), waves(fixed), chosen.tile.name.replace("x", " × "),
                    waves(chosen), f"{fixed.time / chosen.time:.2f}"])  # fmt: skip
    return out


class TileChoices(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(paths.KERNEL_DIR / "tile_model.py"))
        try:
            table_rows = rows([parse_shape(a) for a in self.arguments[0].split()])
        except ValueError as exc:
            raise self.error(f"tile-choices: {exc}") from exc
        header = ["Shape", "V7: 128 × 256", "The model picks", "Its tiles", "Predicted time, V7 over V8"]
        table = nodes.table(classes=["tile-choices"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for width in (16, 30, 14, 30, 10):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=h)) for h in header))
        group += head
        body = nodes.tbody()
        for values in table_rows:
            body += nodes.row("", *(nodes.entry("", nodes.paragraph(text=v)) for v in values))
        group += body
        return [table]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("tile-choices", TileChoices)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
