"""The site: it builds with warnings as errors, its pages hold their code and charts, and its numbers are true.

The site is built once per test session (module fixture) exactly as ``nox -s docs``
builds it, from the repository as it is: the committed results file, or none.
"""

from __future__ import annotations

import filecmp
import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_plots import fixture_results, write_fixture

import chartlib

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import kernel_source  # noqa: E402
import results_role  # noqa: E402

CHAPTERS = [f"v{i}" for i in range(7)]
RST = sorted(DOCS.glob("**/*.rst"))
RST = [p for p in RST if "gallery" not in p.relative_to(DOCS).parts]
# A number followed by a performance unit: what a page must only state through the results file.
# "×" counts only when no digit follows, so that sizes such as 128 × 256 are not taken for ratios.
NUMBER_WITH_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(TFLOPS|TFLOP/s|GB/s|TB/s|ms\b|µs|us\b|%|×(?!\s*\d))")
INCLUDE_DIRECTIVE = re.compile(r"^([ \t]*)\.\. (literalinclude|kernel-source):: (\S+)\n((?:\1   .*\n|[ \t]*\n)*)", re.M)


# ---------------------------------------------------------------------------- the build


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-b", "html", "-c", ".", "docs", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert "WARNING" not in done.stderr, done.stderr
    return out


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any] | None:
    return chartlib.load()


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


def built_pages(site: Path) -> list[Path]:
    skip = {"genindex.html", "search.html", "py-modindex.html"}
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
        else:
            found.append((kind, (rst.parent / target).resolve(), options))
    return found


# ---------------------------------------------------------------------------- build and structure


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors(site: Path) -> None:
    assert (site / "index.html").is_file()
    for chapter in CHAPTERS:
        assert (site / "chapters" / f"{chapter}.html").is_file()
    assert (site / "method.html").is_file()
    assert (site / "gallery" / "index.html").is_file()


@pytest.mark.slow
def test_each_chapter_page_holds_its_whole_kernel_when_the_file_exists(site: Path) -> None:
    for chapter in CHAPTERS:
        text = page_text(site / "chapters" / f"{chapter}.html")
        source = kernel_source.kernel_path(chapter)
        if not source.exists():
            assert "is being written and is not in the repository yet" in text, chapter
            continue
        code = source.read_text(encoding="utf-8")
        body = code[code.index("import tilus") : code.index("common.run_main(")]
        missing = [line.strip() for line in body.splitlines() if line.strip() and line.strip() not in text]
        assert not missing, f"chapters/{chapter}.html lacks lines of {source.name}: {missing[:3]}"


@pytest.mark.slow
def test_each_chapter_page_shows_its_chart_or_says_it_is_not_measured(site: Path, recorded: Any) -> None:
    for chapter in CHAPTERS:
        page = (site / "chapters" / f"{chapter}.html").read_text(encoding="utf-8")
        if chartlib.entry(recorded, chapter) is None:
            assert f"{chapter.upper()} is not measured yet, so its chart is not drawn" in page, chapter
            assert f"plot_{chapter}.svg" not in page, f"{chapter}: a chart for a version with no numbers"
        else:
            assert f"_images/plot_{chapter}.svg" in page, chapter
            assert (site / "_images" / f"plot_{chapter}.svg").stat().st_size > 5000


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
        for script in re.findall(r"^\s*\.\. (?:results-chart|plot):: (\S+)", text, re.M):
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
            if kind == "literalinclude" or options:
                assert {"start-at", "end-at"} <= options.keys() or "pyobject" in options, (
                    f"{rst.relative_to(ROOT)}: {kind} {target} has no :start-at:/:end-at: markers"
                )


@pytest.mark.slow
def test_no_page_is_orphaned(site: Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    linked = {
        (site / html.unescape(href).split("#")[0]).resolve() for href in re.findall(r'href="([^"#]+\.html)', index)
    }
    linked.add((site / "index.html").resolve())
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


# ---------------------------------------------------------------------------- numbers stay true


def _holds(number: str, held: list[float]) -> bool:
    """Whether a number as printed ("601", "1.829") is some value of the file rounded to the printed digits."""
    decimals = len(number.partition(".")[2])
    return any(f"{value:.{decimals}f}" == number for value in held)


@pytest.mark.slow
def test_pages_state_no_number_the_results_file_does_not_hold(site: Path, recorded: Any) -> None:
    held = results_role.numbers_held(recorded)
    wrong = []
    for page in built_pages(site):
        for number, unit in NUMBER_WITH_UNIT.findall(page_text(page)):
            if not _holds(number, held):
                wrong.append(f"{page.relative_to(site)}: {number} {unit}")
    assert not wrong, f"numbers that are not in the results file: {wrong}"


def test_rst_states_numbers_only_through_the_result_role() -> None:
    for rst in RST:
        text = re.sub(r":result:`[^`]+`", "", rst.read_text(encoding="utf-8"))
        typed = NUMBER_WITH_UNIT.findall(text)
        assert not typed, f"{rst.relative_to(ROOT)} types numbers by hand: {typed}"


def test_number_check_catches_a_hand_typed_number() -> None:
    held = results_role.numbers_held(fixture_results())
    stated = NUMBER_WITH_UNIT.findall("V3 reaches 601 TFLOPS, 80% of cuBLAS, in 1.829 ms; it was 612 TFLOPS before.")
    verdict = {number: _holds(number, held) for number, _ in stated}
    assert verdict == {"601": True, "80": True, "1.829": True, "612": False}


def test_every_result_role_in_the_pages_names_a_real_field() -> None:
    data = fixture_results(versions=tuple(CHAPTERS))
    for rst in RST:
        for spec in results_role.iter_specs(rst.read_text(encoding="utf-8")):
            rendered = results_role.render(data, spec)  # raises ValueError on a field the file does not have
            assert rendered != chartlib.NOT_MEASURED, f"{rst.name}: {spec} is unmeasured even with every entry"


def test_result_role_formats_values_from_the_file() -> None:
    data = fixture_results()
    assert results_role.render(data, "v3.tflops") == "601 TFLOPS"
    assert results_role.render(data, "v3.fraction_of_cublas") == f"{data['entries']['v3']['fraction_of_cublas']:.0%}"
    assert results_role.render(data, "v3.fraction_of_cublas:x") == f"{data['entries']['v3']['fraction_of_cublas']:.2f}×"
    assert results_role.render(data, "v3.speedup") == f"{601.1 / 547.9:.2f}×"
    assert results_role.render(data, "v3.config") == "block_m=128, block_n=128, block_k=64"
    assert results_role.render(data, "v3.counters.tensor_pipe_pct") == "37%"
    assert results_role.render(data, "gpu.name") == "Fixture GPU X900"
    assert results_role.render(data, "problem.shape") == "8192×8192×8192"
    assert results_role.render(data, "gpu.clocks_mhz.sm_max") == "1980 MHz"


def test_result_role_says_not_measured_yet_for_missing_versions_and_files() -> None:
    data = fixture_results(versions=("v0", "v1"))
    assert results_role.render(data, "v5.tflops") == "not measured yet"
    assert results_role.render(data, "v2.speedup") == "not measured yet"
    assert results_role.render(None, "v0.tflops") == "not measured yet"
    assert results_role.render(None, "gpu.name") == "not measured yet"
    data["entries"]["v1"]["counters"] = None  # ncu was not available
    assert results_role.render(data, "v1.counters.tensor_pipe_pct") == "not recorded"


def test_result_role_rejects_unknown_fields_and_formats() -> None:
    data = fixture_results()
    with pytest.raises(ValueError, match="no field 'tflop'"):
        results_role.render(data, "v3.tflop")
    with pytest.raises(ValueError, match="unknown result"):
        results_role.render(data, "v9.tflops")
    with pytest.raises(ValueError, match="unknown format"):
        results_role.render(data, "v3.tflops:percent")


def _fake_app() -> SimpleNamespace:
    return SimpleNamespace()


def test_corrupt_results_file_stops_the_build_with_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sphinx.errors import ExtensionError

    bad = tmp_path / "nvidia-h200.json"
    data = fixture_results()
    data["entries"]["v1"]["tflops"] = "fast"
    bad.write_text(json.dumps(data))
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(bad))
    with pytest.raises(ExtensionError, match=r"nvidia-h200\.json.*entries\.v1\.tflops"):
        results_role._load(_fake_app())


def test_no_results_file_means_everything_is_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(tmp_path / "none.json"))
    app = _fake_app()
    results_role._load(app)
    assert app.hopper_results is None and app.hopper_results_path is None


def test_a_valid_results_file_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(write_fixture(tmp_path)))
    app = _fake_app()
    results_role._load(app)
    assert app.hopper_results["gpu"]["name"] == "Fixture GPU X900"


def test_gallery_staging_adds_a_titled_docstring_and_keeps_the_code(tmp_path: Path) -> None:
    staged = kernel_source.stage_gallery(tmp_path)
    assert (tmp_path / "GALLERY_HEADER.rst").is_file()
    for path in staged:
        source = kernel_source.KERNELS / path.name
        text = path.read_text(encoding="utf-8")
        assert text.startswith('r"""\n' + path.name.replace("_", "\\_"))
        assert text.endswith(source.read_text(encoding="utf-8"))
        compile(text, str(path), "exec")


def test_same_process_cublas_range_spans_the_versions_own_cublas_timings() -> None:
    data = fixture_results(versions=("v0", "v1", "v2"))
    data["entries"]["v1"]["cublas_latency_ms"] = 1.6
    data["entries"]["v2"]["cublas_latency_ms"] = 1.5
    data["entries"]["v0"]["cublas_latency_ms"] = 1.55
    data["entries"]["cublas"]["latency_ms"] = 9.9  # the separate entry is not part of the range
    flop = 2 * 8192**3
    assert results_role.render(data, "cublas.same_process_min_ms") == "1.500 ms"
    assert results_role.render(data, "cublas.same_process_max_ms") == "1.600 ms"
    assert results_role.render(data, "cublas.same_process_min_tflops") == f"{flop / 1.6e-3 / 1e12:.0f} TFLOPS"
    assert results_role.render(data, "cublas.same_process_max_tflops") == f"{flop / 1.5e-3 / 1e12:.0f} TFLOPS"
    assert results_role.render(data, "cublas.same_process_spread") == "7%"
    held = results_role.numbers_held(data)
    assert any(abs(v - (1.6 / 1.5 - 1) * 100) < 1e-9 for v in held)


def test_fraction_of_the_cublas_entry_uses_the_separate_entry_not_the_same_process_timing() -> None:
    data = fixture_results(versions=("v0", "v1"))
    data["entries"]["v1"]["fraction_of_cublas"] = 0.5
    expected = data["entries"]["v1"]["tflops"] / data["entries"]["cublas"]["tflops"]
    assert results_role.render(data, "v1.fraction_of_cublas_entry") == f"{expected:.0%}"
    del data["entries"]["cublas"]
    assert results_role.render(data, "v1.fraction_of_cublas_entry") == "not measured yet"


def test_what_the_prose_says_about_the_recorded_results_is_true(recorded: Any) -> None:
    """Sentences the chapters state in words (not through the role) must still hold for the committed file."""
    if recorded is None:
        pytest.skip("no results file: the pages state no such comparisons")
    e = recorded["entries"]
    if {"v2", "v3"} <= e.keys():  # v3.rst: "V2 and V3 are a tie": the medians differ less than V3's own processes
        spread = max(e["v3"]["process_latencies_ms"]) - min(e["v3"]["process_latencies_ms"])
        assert abs(e["v3"]["latency_ms"] - e["v2"]["latency_ms"]) < spread
        dram = {n: x["counters"]["dram_throughput_pct"] for n, x in e.items() if n != "cublas" and x.get("counters")}
        assert max(dram, key=dram.get) == "v3"  # "the highest of any version"
    if {"v4", "v5"} <= e.keys():  # v5.rst, index.rst: V5 is slower than V4, in every process
        assert e["v5"]["tflops"] < e["v4"]["tflops"]
        assert min(e["v5"]["process_latencies_ms"]) > max(e["v4"]["process_latencies_ms"])
        assert e["v5"]["config"]["num_stages"] == 3
    if "v4" in e:  # v4.rst: swizzle_size 1 won at this size
        assert e["v4"]["config"]["swizzle_size"] == 1
    if {"v4", "v5", "v6", "cublas"} <= e.keys():  # v6.rst: "Where V6 stands"
        versions = [n for n in e if n != "cublas"]
        assert max(versions, key=lambda n: e[n]["tflops"]) == "v6"
        assert e["v6"]["fraction_of_cublas"] < 1 and e["v6"]["tflops"] < e["cublas"]["tflops"]  # no parity
        assert e["v6"]["config"]["swizzle_size"] == 16
        # "V6 no longer moves more bytes from memory than cuBLAS does"; V4 and V5 (row-major) did
        dram = {n: e[n]["counters"]["dram_throughput_pct"] for n in ("v4", "v5", "v6", "cublas")}
        assert dram["v6"] <= dram["cublas"] < min(dram["v4"], dram["v5"])
        # "clocks vary between processes by more than the distance being measured"
        spread = results_role.lookup(recorded, "cublas.same_process_spread")
        assert spread > 1 - e["v6"]["fraction_of_cublas"]
    steps = {(r["round"], r["name"]): r for r in recorded.get("steps", [])}
    if steps:  # v6.rst: "What the table says"
        f = {key: r["fraction_of_cublas"] for key, r in steps.items()}
        assert [r["name"] for r in steps.values() if r["kept"]] == ["v6-rows-sw16"]
        r1, r2 = "round 1", "round 2"
        assert max((n for (r, n) in f if r == r1), key=lambda n: f[r1, n]) == "v6-chunks-sw16"  # largest effect
        assert max(f[r1, "v6-chunks-sw16"], f[r1, "v6-chunks-sw8"]) > f[r1, "v6-chunks"] > f[r1, "v6-chunks-sw4"]
        assert f[r2, "v6-rows-sw16"] > f[r2, "v6-rows"]
        for run, chunks, rows in ((r1, "v6-chunks", "v6-rows"), (r2, "v6-chunks-sw16", "v6-rows-sw16")):
            lo, hi = steps[run, rows]["fraction_range"]  # "within the noise of the rounds"
            assert abs(f[run, chunks] - f[run, rows]) < (hi - lo) / 4
        lo, hi = steps[r2, "v6-rows-sw16"]["fraction_range"]  # "32 was not distinguishable from 16"
        assert abs(f[r2, "v6-chunks-sw32"] - f[r2, "v6-chunks-sw16"]) < (hi - lo) / 4
        assert max(f[r1, "v6-regs-s3"], f[r1, "v6-regs-s4"]) < f[r1, "v6-rows"]  # "C from registers: slower"
        assert f[r1, "v6-chunks-k32s6"] < f[r1, "v6-chunks"] and f[r1, "v6-chunks-k32s6-sw8"] < f[r1, "v6-chunks-sw8"]
        assert f[r2, "v6-chunks-k32s6-sw16"] < f[r2, "v6-chunks-sw16"]  # "block_k 32: slower"
        assert f[r1, "v6-chunks-256x128"] < f[r1, "v6-chunks"]  # "256 x 128: slower"
        cluster = [n for (r, n) in f if n.startswith("v6c-")]
        assert cluster and max(f[r2, n] for n in cluster) < f[r2, "v6-rows"]  # "far slower"
        assert f[r2, "v6c-chunks-k32s6-sw8"] < min(f[r2, n] for n in cluster if "k32" not in n)  # "block_k: worse"
        assert f[r1, "v5-s4"] <= f[r1, "v5-s3"]  # v5.rst: "no faster than with three"
    sweep = recorded.get("sweep", [])
    # index.rst, v6.rst: the sweep includes torch.compile as a peer, at every shape the others have
    peers = {(r["m"], r["n"], r["k"]) for r in sweep if r["impl"] == "torch-compile-max-autotune"}
    assert peers == {(r["m"], r["n"], r["k"]) for r in sweep if r["impl"] == "cublas"}
    at = {r["impl"]: r for r in sweep if (r["m"], r["n"], r["k"]) == tuple(recorded["problem"][d] for d in "mnk")}
    if {"v6", "cublas"} <= at.keys():  # v6.rst: at the ladder's size both sweep points differ from the ladder
        assert at["v6"]["tflops"] != e["v6"]["tflops"] and at["cublas"]["tflops"] != e["cublas"]["tflops"]
