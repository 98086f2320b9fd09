"""The SVG diagrams in figures/: well-formed, reproducible byte for byte, readable in dark mode, CPU-only scripts."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIGURES_DIR = ROOT / "figures"


def _figure_module(name: str) -> ModuleType:
    """A module of figures/ by its plain name (conftest puts figures/ on the path, as running a script there does)."""
    return importlib.import_module(name)


_catalog = _figure_module("catalog")
FIGURES = _catalog.FIGURES
FIGURE_NAMES: tuple[str, ...] = _catalog.FIGURE_NAMES

SVG_NS = "{http://www.w3.org/2000/svg}"

# Run Python with torch, tilus and CUDA bindings made unimportable and no GPU visible: a figure script that
# reached for any of them fails loudly instead of silently needing a kernel environment.
_NO_GPU_PRELUDE = (
    "import sys, runpy\nfor name in ('torch', 'tilus', 'cuda', 'triton', 'tvm_ffi'):\n    sys.modules[name] = None\n"
)


def _run_without_gpu_stack(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "MPLCONFIGDIR": str(tmp_path / "mplconfig")}
    env["PYTHONPATH"] = os.pathsep.join([str(FIGURES_DIR), env.get("PYTHONPATH", "")])  # the scripts' own folder
    env.pop("MPLBACKEND", None)
    proc = subprocess.run(
        [sys.executable, "-c", _NO_GPU_PRELUDE + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"figure drawing failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _parse(name: str) -> ET.Element:
    return ET.parse(FIGURES_DIR / f"{name}.svg").getroot()


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _style_value(element: ET.Element, key: str) -> str | None:
    match = re.search(rf"(?:^|;)\s*{key}:\s*([^;]+)", element.get("style", ""))
    return match.group(1).strip() if match else None


def test_figures_folder_holds_exactly_the_catalogued_svgs_each_with_its_script() -> None:
    committed = sorted(p.stem for p in FIGURES_DIR.glob("*.svg"))
    assert committed == sorted(FIGURE_NAMES)
    for name in FIGURE_NAMES:
        assert (FIGURES_DIR / f"{name}.py").is_file(), f"figures/{name}.svg has no figures/{name}.py drawing it"
    assert len(set(FIGURE_NAMES)) == len(FIGURE_NAMES)
    for info in FIGURES:
        assert info.caption and info.alt, f"{info.name}: caption and alt text are needed by the chapter pages"


@pytest.mark.parametrize("name", FIGURE_NAMES)
def test_svg_is_well_formed_with_a_viewbox_and_non_zero_size(name: str) -> None:
    root = _parse(name)
    assert root.tag == f"{SVG_NS}svg"
    x, y, w, h = (float(v) for v in root.get("viewBox", "").split())
    assert (x, y) == (0, 0) and w > 0 and h > 0, f"{name}: viewBox {root.get('viewBox')!r}"
    for attr in ("width", "height"):
        value = root.get(attr, "")
        assert re.fullmatch(r"[0-9.]+pt", value) and float(value[:-2]) > 0, f"{name}: {attr}={value!r}"
    texts = [t for t in root.iter(f"{SVG_NS}text") if (t.text or "").strip()]
    assert len(texts) >= 5, f"{name}: text should stay text (svg.fonttype none), found {len(texts)} labels"


@pytest.mark.parametrize("name", FIGURE_NAMES)
def test_svg_holds_no_timestamp_or_tool_version(name: str) -> None:
    data = (FIGURES_DIR / f"{name}.svg").read_text(encoding="utf-8")
    assert "dc:date" not in data
    assert "Matplotlib v" not in data and "dc:creator" not in data.lower()
    assert not re.search(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", data), f"{name}: looks like a timestamp"


@pytest.mark.parametrize("name", FIGURE_NAMES)
def test_svg_draws_on_a_white_panel_with_dark_text_so_it_reads_in_dark_mode(name: str) -> None:
    root = _parse(name)
    _, _, vw, vh = (float(v) for v in root.get("viewBox", "").split())
    paths = list(root.iter(f"{SVG_NS}path"))
    # the figure background is transparent: only the rounded panel shows, on light and dark pages alike
    assert _style_value(paths[0], "fill") == "none" and _style_value(paths[0], "opacity") == "0"
    panel = paths[1]
    assert _style_value(panel, "fill") == "#ffffff", f"{name}: the first shape must be the white panel"
    numbers = [float(n) for n in re.findall(r"-?[0-9.]+", panel.get("d", ""))]
    xs, ys = numbers[0::2], numbers[1::2]
    assert (max(xs) - min(xs)) > 0.98 * vw and (max(ys) - min(ys)) > 0.98 * vh, f"{name}: panel must cover it"
    assert "Q" in panel.get("d", ""), f"{name}: the panel has rounded corners"
    for text in root.iter(f"{SVG_NS}text"):
        colour = _style_value(text, "fill") or "#000000"
        assert _contrast(colour, "#ffffff") >= 4.5, f"{name}: text {text.text!r} in {colour} is too faint on white"


def test_body_text_colours_stay_legible_on_every_box_fill() -> None:
    style = _figure_module("style")
    fills = [fill for fill, _ in style.ROLES.values()] + [fill for fill, _ in style.GROUP_COLOURS]
    for ink in (style.INK, style.MUTED):
        for fill in fills:
            assert _contrast(ink, fill) >= 4.5, f"{ink} on {fill}"


def test_each_figure_script_redraws_its_svg_byte_for_byte_without_gpu_torch_or_tilus(tmp_path: Path) -> None:
    # one interpreter for all scripts keeps this fast; each still runs as __main__ with its own argv
    lines = []
    for name in FIGURE_NAMES:
        lines.append(f"sys.argv = ['{name}.py', '--out', {str(tmp_path / name)!r}]")
        lines.append(f"runpy.run_path('figures/{name}.py', run_name='__main__')")
    _run_without_gpu_stack("\n".join(lines) + "\n", tmp_path)
    for name in FIGURE_NAMES:
        fresh = (tmp_path / name / f"{name}.svg").read_bytes()
        assert fresh == (FIGURES_DIR / f"{name}.svg").read_bytes(), (
            f"figures/{name}.svg is stale or not reproducible: run `python figures/draw_figures.py` and commit"
        )


def test_runner_draws_the_named_figures_and_rejects_unknown_names(tmp_path: Path) -> None:
    draw_figures = importlib.import_module("draw_figures")
    (written,) = draw_figures.draw_all(tmp_path, names=("two_consumer_split",))
    with pytest.raises(ValueError, match="unknown figure"):
        draw_figures.draw_all(tmp_path, names=("no_such_figure",))
    assert written.read_bytes() == (FIGURES_DIR / "two_consumer_split.svg").read_bytes()


def test_raster_figure_draws_the_kernels_raster_model_and_its_panel_counts() -> None:
    fig = _figure_module("raster_order")
    tiles = [fig.grouped(pid) for pid in range(fig.TILE_ROWS * fig.TILE_COLS)]
    assert sorted(tiles) == [(r, c) for r in range(fig.TILE_ROWS) for c in range(fig.TILE_COLS)]
    # the counts drawn are the kernels' own raster model's first-wave working set
    model = fig._raster_model()
    for swizzle, order in ((1, fig.row_major), (fig.GROUP, fig.grouped)):
        first_wave = model.panels_per_wave(fig.TILE_ROWS, fig.TILE_COLS, swizzle, fig.WAVE)[0]
        assert first_wave == tuple(map(len, fig.panels_touched(order)))
    svg = (FIGURES_DIR / "raster_order.svg").read_text(encoding="utf-8")
    for order in (fig.row_major, fig.grouped):
        rows, cols = fig.panels_touched(order)
        label = f"{len(rows)} A row-panels + {len(cols)} B column-panels = {len(rows) + len(cols)}"
        assert label in svg
    assert sum(map(len, fig.panels_touched(fig.grouped))) < sum(map(len, fig.panels_touched(fig.row_major)))


def test_stage_ring_phase_flips_exactly_when_the_stage_index_wraps() -> None:
    fig = _figure_module("stage_ring")

    for k in range(1, fig.NUM_K_TILES):
        wrapped = fig.stage_of(k) == 0
        assert (fig.phase_of(k) != fig.phase_of(k - 1)) == wrapped
