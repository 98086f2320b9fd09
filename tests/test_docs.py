"""The site: it builds with warnings and deprecations as errors, its pages hold their code and charts, every
number on them comes from the results file, a rebuild with nothing changed reads no page, and a site with
no results file yet builds and says "not measured yet". Nothing here reads a GPU.
"""

from __future__ import annotations

import copy
import filecmp
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import early
from fake_results import fake_file
from matmul_data import budget, model, paths, results, stats, versions
from matmul_site import method_tables, rerun
from matmul_site.numfmt import NOT_MEASURED
from matmul_site.sphinx import kernel_source

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CHAPTERS = versions.names()
RST = sorted(p for p in DOCS.glob("**/*.rst") if not {"gallery", "_generated"} & set(p.relative_to(DOCS).parts))
# A number followed by a performance unit: what a page must only state through a generated value.
# "×" counts only when no digit follows, so that sizes such as 128 × 256 are not taken for ratios.
NUMBER_WITH_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(TFLOPS|TFLOP/s|GB/s|TB/s|ms\b|µs|us\b|%|×(?!\s*\d))")
INCLUDE_DIRECTIVE = re.compile(r"^([ \t]*)\.\. (literalinclude|kernel-source):: (\S+)\n((?:\1   .*\n|[ \t]*\n)*)", re.M)
# The confidence level of every interval (stats.CONFIDENCE) is a constant of the method, not a measurement.
CONFIDENCE = re.compile(rf"{100 * stats.CONFIDENCE:.0f}%\s+(?:bootstrap\s+)?intervals?")
SUBSTITUTION = re.compile(r"\|[^|\s]+\|")
OPTION = re.compile(r"^[ \t]+:[\w-]+:.*$", re.M)  # a directive's option line


def build(
    source: Path, out: Path, *, results_file: Path | None = None, rerun_without_hopper: bool = False, log: str = "build"
) -> Path:
    """sphinx-build -W -n of ``source`` as `nox -s docs` runs it, with deprecation warnings as errors; stderr in
    out/../stderr, stdout (which pages were read and written) in out/../<log>.log.

    ``rerun_without_hopper`` sets the rerun variable with an nvidia-smi on PATH that reports a non-Hopper GPU.
    """
    env = {**early.ENVIRON, "PYTHONWARNINGS": "error::DeprecationWarning,error::PendingDeprecationWarning",
           "NO_COLOR": "1"}  # fmt: skip
    for name in (rerun.ENV, "FORCE_COLOR", paths.ENV_RESULTS):
        env.pop(name, None)
    if results_file is not None:
        env[paths.ENV_RESULTS] = str(results_file)
    if rerun_without_hopper:
        bin_dir = out.parent / "bin"
        bin_dir.mkdir()
        (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA A100-SXM4-80GB, 8.0'\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
        env.update({rerun.ENV: "1", "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"})
    command = [sys.executable, "-m", "sphinx", "-N", "-W", "--keep-going", "-n", "-b", "html", "-c", ".",
               str(source), str(out)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert "WARNING" not in done.stderr and "Warning" not in done.stderr, done.stderr
    (out.parent / "stderr").write_text(done.stderr)
    (out.parent / f"{log}.log").write_text(done.stdout)
    return out


def pages_in_log(where: Path, log: str, step: str) -> set[str]:
    """The pages a build's log says it read (``step="reading sources"``) or wrote (``"writing output"``)."""
    text = (where / f"{log}.log").read_text()
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text).replace("\r", "\n")  # a terminal's escape codes, if any
    return set(re.findall(rf"^{step}\.\.\. \[\s*\d+%\] (\S+)$", text, re.M))


# The committed results file, found at collection: the builds below run in a background thread while tests change
# the environment.
COMMITTED_RESULTS = paths.results_file()


def build_site_three_times(where: Path) -> Path:
    """The site of the committed data and generated files, built; built again with nothing changed; then built with
    a fresh copy of the results file (the same values, a newer file): logs build, again and newer."""
    build(DOCS, where / "html")
    build(DOCS, where / "html", log="again")
    assert COMMITTED_RESULTS is not None, "no results file is committed"
    newer = where / "nvidia-h200.json"
    shutil.copy(COMMITTED_RESULTS, newer)  # a fresh copy: newer than every chart drawn from the original
    build(DOCS, where / "html", results_file=newer, log="newer")
    return where


def build_bare_site(where: Path) -> Path:
    """The pages rendered and built with no results file; chart rerun asked for, on no Hopper GPU."""
    shutil.copytree(DOCS, where / "docs", ignore=shutil.ignore_patterns("gallery", "_generated"))
    for name in ("figures", "examples", "build"):  # what the pages reach as ../../figures/ and the like
        (where / name).symlink_to(ROOT / name)
    missing = Path(paths.NO_RESULTS)  # the variable's way to say "no results file"
    env = {**early.ENVIRON, paths.ENV_RESULTS: str(missing)}
    done = subprocess.run([sys.executable, "-m", "matmul_site.render", "--docs", str(where / "docs")], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return build(where / "docs", where / "html", results_file=missing, rerun_without_hopper=True)


# Both builds start when this file's tests are collected (tests/early.py) and run while the tests before them run.
early.register(__file__, "site", build_site_three_times)
early.register(__file__, "bare-site", build_bare_site)


@pytest.fixture(scope="module")
def built() -> Path:
    """The folder of the site built three times (build_site_three_times): html/ and the three builds' logs."""
    return early.result("site")


@pytest.fixture(scope="module")
def site(built: Path) -> Path:
    return built / "html"


@pytest.fixture(scope="module")
def bare_site() -> Path:
    return early.result("bare-site")


class _Text(HTMLParser):
    """The visible text of a page's main article."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article" or self.depth:
            self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.parts.append(data)


def page_text(path: Path) -> str:
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return "".join(parser.parts)


def words(path: Path) -> str:
    """A page's visible text with its whitespace collapsed, for matching sentences."""
    return re.sub(r"\s+", " ", page_text(path))


def built_pages(site: Path) -> list[Path]:
    skip = {"genindex.html", "search.html", "py-modindex.html", "404.html"}  # 404: reached by a missing URL, not a link
    return sorted(p for p in site.glob("**/*.html") if p.name not in skip and "_static" not in p.parts)


def includes(rst: Path) -> list[tuple[str, Path | None, dict[str, str]]]:
    """(directive, target file or None when the kernel is not written yet, options) of every code include."""
    found = []
    for match in INCLUDE_DIRECTIVE.finditer(rst.read_text(encoding="utf-8")):
        kind, target, body = match.group(2), match.group(3), match.group(4)
        options = dict(re.findall(r"^[ \t]*:([\w-]+):[ \t]*(.*)$", body, re.M))
        if kind == "kernel-source":
            path = kernel_source.kernel_path(target)
            found.append((kind, path if path.exists() else None, options))
        else:  # a path from the source folder's root (/_generated/...) or from the page's folder
            path = DOCS / target[1:] if target.startswith("/") else rst.parent / target
            found.append((kind, path.resolve(), options))
    return found


# ---------------------------------------------------------------------------- build and structure


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors(site: Path) -> None:
    assert (site / "index.html").is_file()
    for chapter in CHAPTERS:
        assert (site / "chapters" / f"{chapter}.html").is_file()
    assert (site / "method.html").is_file()
    assert (site / "steps.html").is_file()
    assert (site / "gallery" / "index.html").is_file()


@pytest.mark.slow
def test_each_kernel_is_whole_on_its_gallery_page_and_the_first_also_on_its_chapter(site: Path) -> None:
    pages = [(f"gallery/matmul_{chapter}.html", chapter) for chapter in CHAPTERS]
    for page, chapter in [*pages, (f"chapters/{CHAPTERS[0]}.html", CHAPTERS[0])]:
        text = page_text(site / page)
        source = kernel_source.kernel_path(chapter)
        code = source.read_text(encoding="utf-8")
        body = code[code.index("import tilus") : code.index("common.run_main(")]
        missing = [line.strip() for line in body.splitlines() if line.strip() and line.strip() not in text]
        assert not missing, f"{page} lacks lines of {source.name}: {missing[:3]}"


@pytest.mark.slow
def test_each_chapter_page_shows_its_chart(site: Path) -> None:
    for chapter in CHAPTERS:
        page = (site / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
        assert f"_images/plot_{chapter}.svg" in page, chapter
        assert (site / "_images" / f"plot_{chapter}.svg").stat().st_size > 5000
    for page, chart in (("index", "plot_summary"), ("index", "plot_sweep"), ("steps", "plot_steps")):
        assert f"_images/{chart}.svg" in (site / f"{page}.html").read_text(encoding="utf-8"), chart


@pytest.mark.slow
def test_every_image_a_page_shows_exists_and_is_not_empty(site: Path) -> None:
    for page in built_pages(site):
        for src in re.findall(r'<img[^>]+src="([^"]+)"', page.read_text(encoding="utf-8")):
            if src.startswith(("http:", "https:", "data:")):
                continue
            target = (page.parent / html.unescape(src)).resolve()
            assert target.is_file() and target.stat().st_size > 0, f"{page.relative_to(site)}: {src} is missing"


def test_every_figure_and_chart_the_rst_references_exists() -> None:
    for rst in RST:
        text = rst.read_text(encoding="utf-8")
        for target in re.findall(r"^\s*\.\. (?:figure|image):: (\S+)", text, re.M):
            assert (rst.parent / target).is_file(), f"{rst.relative_to(ROOT)}: {target} does not exist"
        for script in re.findall(r"^\s*\.\. plot:: (\S+)", text, re.M):
            assert (ROOT / "plots" / script).is_file(), f"{rst.relative_to(ROOT)}: plots/{script} does not exist"


def test_every_diagram_in_figures_is_used_by_some_chapter() -> None:
    used = {Path(t).name for rst in RST for t in re.findall(r"\.\. figure:: (\S+)", rst.read_text(encoding="utf-8"))}
    drawn = {p.name for p in (ROOT / "figures").glob("*.svg")}
    assert drawn <= used, f"diagrams no page shows: {sorted(drawn - used)}"


def test_excerpt_markers_resolve_in_the_files_they_name() -> None:
    checked = 0
    for rst in RST:
        for kind, target, options in includes(rst):
            where = f"{rst.relative_to(ROOT)} ({kind} {target.name if target else 'pending'})"
            assert not {"lines", "emphasize-lines", "lineno-start"} & options.keys(), f"{where}: line numbers"
            if target is None:
                continue
            assert target.is_file(), f"{where}: {target} does not exist"
            code = target.read_text(encoding="utf-8")
            start = 0
            for option in ("start-at", "start-after"):
                if option in options:
                    assert options[option] in code, f"{where}: :{option}: {options[option]!r} is not in the file"
                    start = code.index(options[option])
            for option in ("end-at", "end-before"):
                if option in options:
                    assert options[option] in code[start:], f"{where}: :{option}: {options[option]!r} not after start"
            checked += 1
    assert checked >= 20, f"only {checked} excerpts found: is the include pattern still right?"


def test_chapters_include_code_only_by_text_markers() -> None:
    for rst in RST:
        for kind, target, options in includes(rst):
            if target is not None and "_generated" in target.parts:
                continue  # a generated file, quoted whole
            if kind == "literalinclude" or options:
                assert {"start-at", "end-at"} <= options.keys() or "pyobject" in options, (
                    f"{rst.relative_to(ROOT)}: {kind} {target} has no :start-at:/:end-at: markers"
                )


@pytest.mark.slow
def test_no_page_is_orphaned(site: Path) -> None:
    """Every page but those marked ``:orphan:`` (the contributors' docs/writing.rst, linked from CONTRIBUTING.md)."""
    index = (site / "index.html").read_text(encoding="utf-8")
    linked = {
        (site / html.unescape(href).split("#")[0]).resolve() for href in re.findall(r'href="([^"#]+\.html)', index)
    }
    linked.add((site / "index.html").resolve())
    meant = {
        rst.relative_to(DOCS).with_suffix(".html").as_posix() for rst in RST if rst.read_text().startswith(":orphan:")
    }
    assert meant == {"writing.html"}, meant
    linked |= {(site / page).resolve() for page in meant}
    orphans = [str(p.relative_to(site)) for p in built_pages(site) if p.resolve() not in linked]
    assert not orphans, f"pages the navigation does not reach: {orphans}"


@pytest.mark.slow
def test_gallery_lists_every_kernel_with_an_exact_download(site: Path) -> None:
    gallery = (site / "gallery" / "index.html").read_text(encoding="utf-8")
    for chapter in CHAPTERS:
        source = kernel_source.kernel_path(chapter)
        if not source.exists():
            continue
        assert f"matmul_{chapter}.html" in gallery, chapter
        downloads = list(site.glob(f"_downloads/*/matmul_{chapter}.py"))
        assert len(downloads) == 1, downloads
        assert filecmp.cmp(downloads[0], source, shallow=False), f"the download of {source.name} is not the file"


@pytest.mark.slow
def test_gallery_executed_nothing(site: Path) -> None:
    assert not list(site.glob("_images/sphx_glr_matmul_*_001.png")), "a kernel was run at build time"
    for page in site.glob("gallery/matmul_v*.html"):
        assert "Total running time" not in page.read_text(encoding="utf-8")


def test_gallery_staging_adds_a_titled_docstring_and_keeps_the_code(tmp_path: Path) -> None:
    staged = kernel_source.stage_gallery(tmp_path / "src")  # titles: tests/test_gallery.py
    assert (tmp_path / "src" / "GALLERY_HEADER.rst").is_file()
    for path in staged:
        source = kernel_source.KERNELS / path.name
        text = path.read_text(encoding="utf-8")
        assert text.startswith('r"""\nV')
        assert text.endswith(source.read_text(encoding="utf-8"))
        compile(text, str(path), "exec")


def scaled_like_a_card(image: Path, scratch: Path) -> bytes:
    """An image scaled to a gallery card by sphinx-gallery's own function, as the build scales a chart."""
    from sphinx_gallery.utils import scale_image

    scale_image(image, scratch / "card.png", 400, 280)  # sphinx-gallery's default thumbnail_size
    return (scratch / "card.png").read_bytes()


def drawn_png(site: Path, chart: str) -> Path:
    """The plot directive's PNG of a chart: a version's is drawn from its chapter page, the others from plots/."""
    folder = ("docs", "chapters") if re.fullmatch(r"plot_v\d+", chart) else ("plots",)
    return site.joinpath("plot_directive", *folder, f"{chart}.png")


@pytest.mark.slow
def test_gallery_cards_show_each_versions_chart_not_a_placeholder(site: Path, tmp_path: Path) -> None:
    from sphinx_gallery import glr_path_static

    placeholder = scaled_like_a_card(Path(glr_path_static()) / "no_image.png", tmp_path)
    cards = {}
    for chapter in CHAPTERS:
        if not kernel_source.kernel_path(chapter).exists():
            continue
        card = (site / "_images" / f"sphx_glr_matmul_{chapter}_thumb.png").read_bytes()
        assert card != placeholder, f"the {chapter} card shows sphinx-gallery's placeholder"
        chart = drawn_png(site, f"plot_{chapter}")
        assert card == scaled_like_a_card(chart, tmp_path), f"the {chapter} card is not its chapter's chart"
        cards[chapter] = card
    assert len(set(cards.values())) == len(cards), "two cards show the same image"


def previewed(image: Path, scratch: Path) -> bytes:
    """An image laid on a link preview's landscape by link_preview.landscape, as the build lays a chart."""
    from matmul_site.sphinx.link_preview import landscape

    landscape(image, scratch / "preview.png")
    return (scratch / "preview.png").read_bytes()


def test_a_preview_is_the_image_scaled_to_fit_1200_by_630_and_centred_on_white(tmp_path: Path) -> None:
    from PIL import Image

    from matmul_site.sphinx.link_preview import OG_SIZE, landscape

    Image.new("RGB", (400, 560), "red").save(tmp_path / "tall.png")  # a chart drawn for a phone: taller than wide
    landscape(tmp_path / "tall.png", tmp_path / "preview.png")
    with Image.open(tmp_path / "preview.png") as preview:
        assert preview.size == OG_SIZE == (1200, 630)
        red = [x for x in range(1200) if preview.getpixel((x, 315)) == (255, 0, 0)]
        assert (red[0], red[-1] + 1) == (375, 825), "the image is not 450 px wide (630 x 400/560) and centred"
        assert preview.getpixel((0, 0)) == preview.getpixel((1199, 629)) == (255, 255, 255)
        assert preview.getpixel((600, 0)) == preview.getpixel((600, 629)) == (255, 0, 0)  # the full height


@pytest.mark.slow
def test_link_previews_are_the_plot_directives_own_png_of_each_chart_on_a_landscape(site: Path, tmp_path: Path) -> None:
    previews = sorted((site / "_static" / "og").glob("*.png"))
    data = results.read_default()
    measured = [c for c in CHAPTERS if results.ladder_row(data, c) is not None]  # the others preview the ladder
    assert {p.stem for p in previews} == {f"plot_{c}" for c in measured} | {"plot_summary"}
    for preview in previews:  # drawn once, with the page's SVG, then laid out: not a second drawing
        assert preview.read_bytes() == previewed(drawn_png(site, preview.stem), tmp_path), preview.name


# A printed unit -> the kind of value it may print; and the keys of the results file whose values are ratios.
UNIT_KIND = {"TFLOPS": "TFLOPS", "TFLOP/s": "TFLOPS", "ms": "ms", "µs": "µs", "us": "µs", "%": "%", "×": "×",
             "GB/s": "GB/s", "TB/s": "TB/s"}  # fmt: skip
RATIO_KEYS = {"ratio_to_cublas", "step", "efficiency", "busy", "band", "band_floor"}


def _walk(node: Any, key: str, held: dict[str, list[float]]) -> None:
    """Each number of the results file as the kind of value its key names; the numbers its texts state with a
    unit (the method's "polled every 5 ms"), as that unit's kind."""
    if isinstance(node, dict):
        for name, value in node.items():
            _walk(value, key if name in ("median", "low", "high") else name, held)
    elif isinstance(node, list):
        for value in node:
            _walk(value, key, held)
    elif isinstance(node, str):
        for number, unit in NUMBER_WITH_UNIT.findall(node):
            held[UNIT_KIND[unit]].append(float(number))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        kind = ("TFLOPS" if "tflops" in key else "ms" if key == "latency_ms" else "%" if "pct" in key
                else "×" if key in RATIO_KEYS else None)  # fmt: skip
        if kind:
            held[kind].append(float(node))


def numbers_held(data: model.Results) -> dict[str, list[float]]:
    """Every number the file holds or the pages derive from it, by the kind of value (UNIT_KIND): TFLOPS, latencies
    (also in µs), ratios (also as percentages, and as a percentage above or below 1), peaks at each row's clock and
    shares of them and of the datasheet, ladder steps per clock cycle; and the L2 yardstick."""
    held: dict[str, list[float]] = {kind: [] for kind in set(UNIT_KIND.values())}
    _walk(data.to_json(), "", held)
    held["µs"] += [1000 * v for v in held["ms"]]
    peak = data.gpu.published_dense_fp16_tflops
    ladder = data.ladder.rows if data.ladder else {}
    for row in ladder.values():  # a ladder step per clock cycle: the step times the clock before over the clock after
        over = ladder.get(row.step.over or "") if row.step else None
        if row.step and over and row.sm_clock_mhz and over.sm_clock_mhz:
            held["×"].append(row.step.median * over.sm_clock_mhz / row.sm_clock_mhz)
    for run in data.figures:
        for row in run.rows.values():
            held["×"].append(row.tflops / peak)
            if row.sm_clock_mhz is not None:
                at_clock = results.peak_tflops_at(data, round(row.sm_clock_mhz))
                held["TFLOPS"].append(at_clock)
                held["×"].append(row.tflops / at_clock)
    held["%"] += [100 * v for v in held["×"]] + [100 * abs(v - 1) for v in held["×"]]
    # The budget boxes' yardstick: the L2 rate from V8's Nsight Compute log, and the TFLOPS it feeds at each version's
    # intensity (build record and tile).
    l2 = budget.l2_rate()
    if l2 is not None:
        held["TB/s"].append(l2.bytes_per_second / 1e12)
        held["GB/s"].append(l2.bytes_per_second / 1e9)
        record = budget.load_builds()
        for name in versions.names():
            _, config = budget.build_of(record, name)
            bm, bn = config["block_m"], config["block_n"]
            held["TFLOPS"].append(l2.bytes_per_second * (bm * bn / (bm + bn)) / 1e12)
    return {kind: [v for v in values if math.isfinite(v)] for kind, values in held.items()}


def _holds(number: str, unit: str, held: dict[str, list[float]]) -> bool:
    """Whether a number as printed with its unit ("601", "TFLOPS") is some value of that kind in the file, rounded
    to the printed digits."""
    decimals = len(number.partition(".")[2])
    return any(f"{value:.{decimals}f}" == number for value in held[UNIT_KIND[unit]])


@pytest.mark.slow
def test_pages_state_no_number_the_results_file_does_not_hold(site: Path) -> None:
    held = numbers_held(results.read_default())
    wrong = []
    for page in built_pages(site):
        for number, unit in NUMBER_WITH_UNIT.findall(CONFIDENCE.sub("", page_text(page))):
            if not _holds(number, unit, held):
                wrong.append(f"{page.relative_to(site)}: {number} {unit}")
    assert not wrong, f"numbers that are not in the results file: {wrong}"


def test_number_check_catches_a_number_the_file_holds_only_as_another_kind_of_value() -> None:
    data = results.read_default()
    held = numbers_held(data)
    v3 = data.ladder.rows["v3"] if data.ladder else None
    assert v3 is not None and v3.step is not None, "the committed results file has V3's ladder row"
    tflops, latency, step = f"{v3.tflops:.0f}", f"{v3.latency_ms:.3f}", f"{v3.step.median:.2f}"
    # Mixed up: a latency of a few ms is no TFLOPS figure, and hundreds of TFLOPS are no ratio and no latency.
    text = f"V3: {tflops} TFLOPS in {latency} ms, {step}× V2. Mixed up: {latency} TFLOPS, {tflops}×, {tflops} ms."
    verdict = [(number, unit, _holds(number, unit, held)) for number, unit in NUMBER_WITH_UNIT.findall(text)]
    assert verdict == [(tflops, "TFLOPS", True), (latency, "ms", True), (step, "×", True),
                       (latency, "TFLOPS", False), (tflops, "×", False), (tflops, "ms", False)]  # fmt: skip


def test_rst_states_numbers_only_through_generated_values() -> None:
    for rst in RST:
        text = OPTION.sub("", SUBSTITUTION.sub("", rst.read_text(encoding="utf-8")))  # not ":width: 100%"
        typed = NUMBER_WITH_UNIT.findall(CONFIDENCE.sub("", text))
        assert not typed, f"{rst.relative_to(ROOT)} types numbers by hand: {typed}"


@pytest.mark.slow
def test_a_second_build_with_nothing_changed_reads_and_writes_no_page(built: Path) -> None:
    assert len(pages_in_log(built, "build", "reading sources")) >= len(RST)  # the log is parsed right
    assert pages_in_log(built, "again", "reading sources") == set()
    assert pages_in_log(built, "again", "writing output") == set()


@pytest.mark.slow
def test_with_no_results_file_the_site_builds_and_says_not_measured_yet(bare_site: Path) -> None:
    index = words(bare_site / "index.html")
    assert index.count(NOT_MEASURED) >= 4
    assert not re.search(r"\d TFLOPS", index), "a ladder number without a results file"
    for chapter in CHAPTERS:
        assert NOT_MEASURED in words(bare_site / "chapters" / f"{chapter}.html"), chapter


# "not measured yet" in the middle of a sentence: followed by a comma, a semicolon or a lowercase word.
MID_SENTENCE = re.compile(rf"{NOT_MEASURED}\s*(?:[,;]|[a-z(])")
# The pages whose sentences are written whole without a results file (``.. whole`` sentences: matmul_site.whole).
WHOLE_WITHOUT_RESULTS = [
    "index.html",
    "steps.html",
    "method.html",
    "glossary.html",
    *(f"chapters/{chapter}.html" for chapter in CHAPTERS),
]
TABLE = re.compile(r"<table\b.*?</table>", re.S)  # a table's cells are not sentences
# A caption that reads "not measured yet" on its own is not a sentence either (tables in a row give several).
ALONE = re.compile(rf'<p class="results-caption">\s*{NOT_MEASURED}\s*</p>')


@pytest.mark.slow
@pytest.mark.parametrize("page", WHOLE_WITHOUT_RESULTS)
def test_with_no_results_file_no_sentence_says_not_measured_yet_in_its_middle(bare_site: Path, page: str) -> None:
    parser = _Text()
    parser.feed(ALONE.sub(" ", TABLE.sub(" ", (bare_site / page).read_text(encoding="utf-8"))))
    text = re.sub(r"\s+", " ", "".join(parser.parts))
    found = [text[max(0, m.start() - 60) : m.end() + 20] for m in MID_SENTENCE.finditer(text)]
    assert not found, f"{page}: " + " | ".join(found)


def test_the_mid_sentence_check_catches_a_number_left_out() -> None:
    assert MID_SENTENCE.search(f"the newest, {NOT_MEASURED}, reaches {NOT_MEASURED} at 8192")
    assert not MID_SENTENCE.search(f"The ladder is {NOT_MEASURED}. How we measured")


@pytest.mark.slow
def test_rerun_asked_for_without_a_hopper_gpu_says_why_once_per_chapter(bare_site: Path) -> None:
    lines = [line for line in (bare_site.parent / "stderr").read_text().splitlines() if rerun.ENV in line]
    assert len(lines) == len(CHAPTERS), lines
    assert all("no Hopper GPU" in line and "A100" in line for line in lines), lines


CAPTION = re.compile(
    r'<p class="results-caption">(.*?)</p>|class="plot-directive[^>]*>\s*<figcaption>(.*?)</figcaption>', re.S
)


@pytest.mark.slow
def test_captions_are_short_and_link_the_method_which_only_the_method_page_tells(site: Path) -> None:
    data = results.read_default()
    # The method's own words as the page shows them: its field names ("method.verdicts.band") replaced by their values.
    method = [method_tables.method_text(text, data.method)
              for text in (data.method.timer, data.method.l2_flush, data.method.order, data.method.statistic,
                           data.method.interval)]  # fmt: skip
    told = {}
    seen = 0
    for page in built_pages(site):
        name = page.relative_to(site).as_posix()
        text = words(page).replace("\u2019", "'")
        told[name] = [m for m in method if m in text]
        for match in CAPTION.finditer(page.read_text(encoding="utf-8")):
            caption = match.group(1) or match.group(2)
            shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", caption)).replace("\u00b6", "").split())
            assert len(shown.split()) < 45, f"{name}: a caption of {len(shown.split())} words: {shown}"
            if "build record" not in shown and name != "method.html":
                assert re.search(r'<a [^>]*href="(\.\./)?method\.html"', caption), f"{name}: no method link: {shown}"
            seen += 1
    assert seen >= len(CHAPTERS) + 3, f"only {seen} captions found"
    assert told.pop("method.html") == method, "the method page does not tell the whole method"
    assert not {name: m for name, m in told.items() if m}, f"pages that repeat the method: {told}"


@pytest.mark.slow
def test_each_chapter_from_v1_offers_its_whole_kernel_diff_collapsed_under_what_changed(site: Path) -> None:
    from matmul_site.sphinx.kernel_diff import kernel_diff

    for chapter in CHAPTERS:
        page = (site / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
        boxes = re.findall(r'<details class="kernel-diff">(.*?)</details>', page, re.S)
        if chapter == CHAPTERS[0]:
            assert not boxes, f"{chapter} has no version before it, yet shows a diff"
            continue
        assert len(boxes) == 1, f"{chapter}: {len(boxes)} kernel diffs"
        start = page.index('id="what-changed-from-')
        section = page[start : page.find("<section id=", start)]
        assert '<details class="kernel-diff">' in section, f"{chapter}: the diff is not under 'What changed'"
        before, text, added, removed = kernel_diff(chapter)
        assert f"matmul_{chapter}.py against matmul_{before}.py: {added} lines added, {removed} removed" in boxes[0]
        shown = html.unescape(re.sub(r"<[^>]+>", "", boxes[0].split("</summary>", 1)[1]))
        assert [line for line in text.splitlines() if line.strip()] == [
            line for line in shown.splitlines() if line.strip()
        ], f"{chapter}: the page's diff is not the whole diff"


@pytest.mark.slow
def test_each_chapter_from_v1_shows_its_whole_file_only_as_a_gallery_link_not_again_beside_its_diff(
    site: Path,
) -> None:
    # The whole file once (the gallery page, which offers the download), the diff collapsed, then excerpts: a page
    # that also printed the file whole would show the same lines three times.
    for chapter in CHAPTERS[1:]:
        page = (site / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
        assert f'href="../gallery/matmul_{chapter}.html' in page, f"{chapter}: no link to its kernel's gallery page"
        outside_diff = re.sub(r'<details class="kernel-diff">.*?</details>', " ", page, flags=re.S)
        code = " ".join(
            html.unescape(re.sub(r"<[^>]+>", "", b)) for b in re.findall(r"<pre.*?</pre>", outside_diff, re.S)
        )
        assert "common.run_main(" not in code, f"{chapter}: the whole kernel file is printed beside its diff"


def test_a_chapter_whose_version_is_not_measured_yet_previews_the_ladder_chart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matmul_site.sphinx.link_preview import LADDER, og_chart

    last, before = versions.names()[-1], versions.names()[-2]
    unmeasured = copy.deepcopy(fake_file())
    for figure in [unmeasured["ladder"], *unmeasured["ladder"]["runs"]]:
        figure["rows"].pop(last)
    (tmp_path / "results.json").write_text(json.dumps(unmeasured))
    monkeypatch.setenv(paths.ENV_RESULTS, str(tmp_path / "results.json"))
    assert og_chart(f"chapters/{last}") == og_chart(f"gallery/matmul_{last}") == LADDER  # its chart is not drawn
    assert og_chart(f"chapters/{before}") == versions.get(before).chart_name


def prose(page: Path) -> tuple[int, int]:
    """A built page's prose: its words (code, literal blocks and the collapsed kernel diff left out; tables and
    captions counted) and the words of its longest paragraph."""
    text = page.read_text(encoding="utf-8")
    found = re.search(r"<article.*?</article>", text, re.S)
    text = found.group(0) if found else text
    for block in (r"<(script|style)\b.*?</\1>", r'<details class="kernel-diff">.*?</details>', r"<pre.*?</pre>"):
        text = re.sub(block, " ", text, flags=re.S)

    def count(fragment: str) -> int:
        return len(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())

    return count(text), max((count(p) for p in re.findall(r"<p>(.*?)</p>", text, re.S)), default=0)


@pytest.mark.slow
def test_each_chapter_is_at_most_2000_words_of_prose_in_paragraphs_of_at_most_150(site: Path) -> None:
    measured = {chapter: prose(site / "chapters" / f"{chapter}.html") for chapter in CHAPTERS}
    long = {chapter: m for chapter, m in measured.items() if m[0] > 2000 or m[1] > 150}
    assert long == {}, "chapters over 2,000 words of prose or with a paragraph over 150 words (words, longest)"


@pytest.mark.slow
def test_every_diagram_links_to_its_full_size_image(site: Path) -> None:
    # On a phone a diagram is drawn a screen wide, its text a few pixels tall: a tap opens the image itself.
    found = 0
    for page in built_pages(site):
        for figure in re.findall(r'<figure class="diagram.*?</figure>', page.read_text(encoding="utf-8"), re.S):
            found += 1
            link = re.search(r'<a class="reference internal image-reference" href="([^"]+\.svg)"><img', figure)
            assert link and (page.parent / link.group(1)).is_file(), f"{page.name}: a diagram without its link"
    assert found >= 5, f"only {found} diagrams found"


@pytest.mark.slow
def test_a_newer_results_file_with_the_same_values_redraws_every_chart_and_reads_only_their_pages(
    built: Path,
) -> None:
    with_charts = {rst.relative_to(DOCS).with_suffix("").as_posix() for rst in RST if ".. plot::" in rst.read_text()}
    assert len(with_charts) >= len(CHAPTERS) + 2
    assert pages_in_log(built, "newer", "reading sources") == with_charts


def test_charts_are_forgotten_when_the_results_file_changes_or_disappears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plot directive redraws a chart only when its script is newer than its image: the chart images go when the
    results file is another, or is gone, and stay while it is the same."""
    from types import SimpleNamespace

    from matmul_site.sphinx import chart_files

    app = SimpleNamespace(doctreedir=str(tmp_path / "out" / ".doctrees"), confdir=str(ROOT))
    charts = chart_files.plot_build_dir(app)  # type: ignore[arg-type]
    data = tmp_path / "results.json"
    data.write_text("{}")
    monkeypatch.setenv(paths.ENV_RESULTS, str(data))

    def drawn() -> bool:
        return (charts / "plot_summary.svg").is_file()

    def draw_and_start_a_build() -> None:
        charts.mkdir(parents=True, exist_ok=True)
        (charts / "plot_summary.svg").write_text("<svg/>")
        chart_files.forget_charts_of_other_results(app)  # type: ignore[arg-type]

    chart_files.forget_charts_of_other_results(app)  # type: ignore[arg-type]  # the first build: nothing yet
    draw_and_start_a_build()
    assert drawn(), "the same results file: the charts are kept"
    data.write_text('{"other": 1}')
    draw_and_start_a_build()
    assert not drawn(), "other bytes in the results file: the charts are drawn again"
    draw_and_start_a_build()
    assert drawn()
    data.unlink()
    monkeypatch.setenv(paths.ENV_RESULTS, paths.NO_RESULTS)
    draw_and_start_a_build()
    assert not drawn(), "no results file any more: the charts are drawn again, saying not measured yet"


def test_a_page_gets_the_definitions_of_the_values_it_names_after_its_own_lines(tmp_path: Path) -> None:
    from matmul_site.sphinx import values

    (tmp_path / "_generated").mkdir()
    (tmp_path / values.VALUES).write_text(
        ".. Generated: do not edit.\n\n.. |a.x| replace:: 1.5×\n.. |b.y| replace:: :doc:`V3 </chapters/v3>`\n"
        ".. |c.z| replace:: unused\n"
    )
    known = values.definitions(tmp_path)
    page = "Title\n=====\n\n|b.y| then |a.x|, |b.y| again, and |nope.w|.\n"
    got = values.with_values(page, known)
    assert got.startswith(page.rstrip("\n")), "the page's own lines keep their numbers"
    assert got[len(page) :].splitlines()[1:] == [known["b.y"], known["a.x"]], "each named value once, nothing else"
    assert values.with_values("No values here.\n", known) == "No values here.\n"
    (tmp_path / values.VALUES).write_text(".. |a.x| replace:: one\n   two\n")
    with pytest.raises(Exception, match="not a one-line substitution definition"):
        values.definitions(tmp_path)


def test_a_value_the_generator_did_not_write_fails_the_strict_build_and_a_written_one_shows(tmp_path: Path) -> None:
    from matmul_site.sphinx import values

    src = tmp_path / "src"
    (src / "_generated").mkdir(parents=True)
    (src / values.VALUES).write_text(".. |a.x| replace:: 1.5×\n")
    (src / "conf.py").write_text('extensions = ["matmul_site.sphinx.values"]\nexclude_patterns = ["_generated"]\n')

    (src / "index.rst").write_text("Title\n=====\n\nIt runs at |a.x| of cuBLAS.\n\nIt runs at |nope.x| of cuBLAS.\n")
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-q",
        "-W",
        "--keep-going",
        "-b",
        "html",
        str(src),
        str(tmp_path / "out"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=early.ENVIRON)
    # One build (a Sphinx process takes seconds to start): -W fails it on line 6's value, --keep-going writes the page.
    assert done.returncode != 0 and 'index.rst:6: ERROR: Undefined substitution referenced: "nope.x"' in done.stderr
    assert done.stderr.count("ERROR") == 1, done.stderr
    assert "It runs at 1.5× of cuBLAS." in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_each_counter_a_chapter_shows_links_to_the_methods_account_with_cublas_for_scale(site: Path) -> None:
    from matmul_site.phrases import COUNTERS

    shown_anywhere = 0
    for chapter in CHAPTERS:
        page = (site / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
        shown = [label for _, label, _ in COUNTERS.values() if html.escape(label, quote=False) in page]
        shown_anywhere += len(shown)
        for label in shown:
            linked = f'href="../method.html#counters"><span class="std std-ref">{html.escape(label, quote=False)}'
            assert linked in page, f"{chapter}: {label!r} does not link to the method's counters"
    assert shown_anywhere, "no chapter shows a counter: the check above checked nothing"
    # cuBLAS's own counter, as the generator wrote it, on the method page.
    values = (DOCS / "_generated" / "values.rst").read_text(encoding="utf-8")
    tensor_pipe = re.search(r"^\.\. \|cublas\.tensor_pipe\| replace:: (.+)$", values, re.M)
    assert tensor_pipe, "the generator wrote no cublas.tensor_pipe"
    assert f"tensor pipe {tensor_pipe[1]}" in words(site / "method.html")
