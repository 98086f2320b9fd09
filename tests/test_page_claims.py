"""Claims the pages make that a test can hold: the "kept" labels of the results are the steps specs', a step read
in the other direction, counted versions, and V0's register arithmetic against Tilus's own estimate."""

from __future__ import annotations

import json
import re

import pytest
import v8_checks

from matmul_bench import plan
from matmul_data import budget, paths, results, versions
from matmul_site import facts

EXPERIMENTS = paths.ROOT / "experiments"
NUMBER_WORDS = "|".join(facts.NUMBER_WORDS)


def page_words(page: str) -> str:
    """A page's reStructuredText with its line breaks and runs of spaces read as single spaces."""
    return " ".join((paths.DOCS_DIR / page).read_text(encoding="utf-8").split())


def test_every_recorded_kept_label_is_the_steps_spec_s() -> None:
    data = results.load_default()
    if data is None:
        pytest.skip("no results file is committed")
    kept_by_title: dict[str, set[str]] = {}
    for spec_file in ("steps.py", "tryit.py"):
        for run in plan.load_steps_file(EXPERIMENTS / spec_file)["RUNS"].values():
            kept_by_title.setdefault(run["title"], set()).update(run.get("kept", ()))
    wrong = []
    for figure in data["steps"]:
        assert figure["title"] in kept_by_title, f"steps run {figure['title']!r} is in no spec"
        kept = kept_by_title[figure["title"]]
        for rows in (figure["rows"], *(run["rows"] for run in figure["runs"])):
            for impl, row in rows.items():
                if impl != results.CUBLAS and bool(row.get("kept")) != (impl in kept):
                    wrong.append(f"{figure['title']}: {impl} kept={row.get('kept')}")
    assert wrong == [], f"kept labels that differ from experiments/steps.py or tryit.py: {wrong}"


# Rows the chapters say went into a version (docs/chapters/v6.rst: groups of 16 are V6; chunks with groups of 16
# are V7's design, which V7's own runs kept): every recorded row of theirs must say kept, in every steps table.
KEPT_IN_PROSE = {"v6-rows-sw16": "chapters/v6.rst", "v6-chunks-sw16": "chapters/v6.rst"}


def test_rows_the_chapters_call_kept_are_kept_everywhere() -> None:
    data = results.load_default()
    if data is None:
        pytest.skip("no results file is committed")
    for impl, page in KEPT_IN_PROSE.items():
        assert f"``{impl}``" in (paths.DOCS_DIR / page).read_text(encoding="utf-8"), f"{page} no longer names {impl}"
        labels = [row.get("kept") for f in data["steps"] for row in (f["rows"].get(impl),) if row is not None]
        assert labels and all(labels), f"{impl} is called kept on {page} but not kept in the results: {labels}"


def test_a_step_read_the_other_way_inverts_its_interval_and_verdict() -> None:
    row = {"step": {"median": 1.25, "low": 1.1, "high": 1.6, "verdict": results.PAYS}}
    assert facts.reversed_step(row) == "costs: 0.80\u00d7 [0.62, 0.91]"
    row["step"] = {"median": 1.0, "low": 0.98, "high": 1.02, "verdict": "parity"}
    assert facts.reversed_step(row).startswith("is at parity")


def test_versions_are_counted_not_typed() -> None:
    names = versions.names()
    assert facts.render("versions.count", {}) == facts.NUMBER_WORDS[len(names)]
    assert facts.render("versions.span", {}) == f"V0 to {versions.label(names[-1])}"
    index = (paths.DOCS_DIR / "index.rst").read_text(encoding="utf-8")
    typed = re.findall(rf"\b(?:{NUMBER_WORDS}|\d+) (?:times|versions)\b", index, re.I)
    assert typed == [], f"docs/index.rst counts versions by hand: {typed}"
    summary = (paths.PLOTS_DIR / "plot_summary.py").read_text(encoding="utf-8")
    assert not re.search(r"V0\s*(?:-|to)\s*V\d", summary), "plots/plot_summary.py names a range of versions by hand"


@pytest.mark.parametrize(
    ("m", "n", "k", "registers"),
    [(128, 128, 64, 256), (64, 128, 64, 160), (128, 64, 64, 160), (128, 128, 16, 160)],
)
def test_v0_register_arithmetic_is_tilus_s(m: int, n: int, k: int, registers: int) -> None:
    """docs/chapters/v0.rst: 256 per thread at 128 x 128 x 64 (refused at 224), 160 for V0's tiles and for a
    16-wide K slice at 128 x 128."""
    from tilus import float16, float32
    from tilus.lang.modules.cuda import cuda

    if registers >= 224:
        with pytest.raises(ValueError, match=rf"register usage \({registers}\)"):
            cuda.resolve_dot_config(float16, float32, m=m, n=n, k=k, num_warps=4)
        return
    config = cuda.resolve_dot_config(float16, float32, m=m, n=n, k=k, num_warps=4)
    halves = config.la.local_size + config.lb.local_size  # fp16 values per thread, two to a 32-bit register
    assert halves // 2 + config.lc.local_size == registers


def test_v0_page_states_the_arithmetic_the_test_checks() -> None:
    page = (paths.DOCS_DIR / "chapters" / "v0.rst").read_text(encoding="utf-8")
    for claim in ("That is 256 per thread", "come to 160", "16 registers per thread", "256 − 32 = 224"):
        assert claim in " ".join(page.split()), claim


# docs/chapters/v8.rst: at M = 3000, K = 4096, the 128 x 192 tile ranked by the width of its last column of tiles,
# from the unreplicated GPU checks whose logs the page cites (median over rounds, each tile in the same rounds).
V8_EDGE_FASTEST = [(3000, 4928), (3000, 4960), (3000, 4992), (3000, 5184), (5000, 3000)]  # last column >= 120 wide
V8_EDGE_SLOWER = [(3000, 5000), (3000, 5008), (3000, 5056), (3072, 5000)]  # last column <= 64 wide


def test_v8_page_edge_tile_claims_hold_in_every_log_that_timed_the_shape() -> None:
    timings = v8_checks.medians()
    for m, n in V8_EDGE_FASTEST:
        assert n % 192 == 0 or n % 192 >= 120, (m, n)
        for name, ms in timings[(m, n, 4096)].items():
            tiles = {impl: t for impl, t in ms.items() if impl != "cuBLAS"}
            assert min(tiles, key=tiles.__getitem__) == "128x192", f"{name}, {m}x{n}x4096: {tiles}"
    for m, n in V8_EDGE_SLOWER:
        assert 0 < n % 192 <= 64, (m, n)
        for name, ms in timings[(m, n, 4096)].items():
            assert ms["128x192"] > ms["128x256"], (name, m, n, ms)
    # "the same 648 tiles, all of them full, took less time than at N = 5056 or 5000"
    assert all(-(-3000 // 128) * -(-n // 192) == 648 for n in (5000, 5056, 5184))
    (full,) = (ms["128x192"] for ms in timings[(3000, 5184, 4096)].values())
    for n in (5056, 5000):
        assert all(full < ms["128x192"] for ms in timings[(3000, n, 4096)].values()), n
    text = page_words("chapters/v8.rst")
    fastest = ", ".join(str(n) for m, n in V8_EDGE_FASTEST if m == 3000)
    slower = ", ".join(str(n) for m, n in V8_EDGE_SLOWER if m == 3000)
    assert f"(N = {fastest}, and with M and N swapped)" in text
    assert f"(N = {slower}, and at 3072 × 5000)" in text


def test_v8_page_build_times_are_the_range_its_logs_hold() -> None:
    """docs/chapters/v8.rst: a build Tilus did not hold in its cache took about 9 to 16 seconds (a cached one ~1 s)."""
    logs = sorted((paths.ROOT / "plots" / "results" / "logs").glob("v8-check*.json"))
    checks = [c for log in logs for c in json.loads(log.read_text(encoding="utf-8"))["checks"]]
    seconds = [c["build_s"] for c in checks if "build_s" in c]
    built = [s for s in seconds if s > 2]  # below that, the build came from Tilus's cache on disk
    assert built
    assert (round(min(built)), round(max(built))) == (9, 16)
    text = page_words("chapters/v8.rst")
    assert "took about 9 to 16 seconds" in text


def test_the_versions_the_sweep_times_run_one_tile_as_the_method_page_says() -> None:
    """docs/method.rst: the versions the sweep times run one tile, 128 x 256, at all of its shapes."""
    data = results.load_default()
    if data is None:
        pytest.skip("no results file is committed")
    method = page_words("method.rst")
    assert "run one tile at all of its shapes, 128 × 256" in method
    tiles = {
        (impl, (row["config"]["block_m"], row["config"]["block_n"]))
        for figure in results.sweep_runs(data)
        for impl, row in figure["rows"].items()
        if impl != results.CUBLAS
    }
    assert tiles and {tile for _, tile in tiles} == {(128, 256)}, tiles


def test_v3_page_register_arithmetic_follows_its_build() -> None:
    """docs/chapters/v3.rst: a warp of V3 takes 5,120 registers, so 12 warps (two blocks of five) fit."""
    entry = budget.load_builds_cached()["versions"]["v3"]
    per_warp = -(-entry["registers"] * 32 // 256) * 256
    assert (entry["threads"], per_warp, 65536 // per_warp, 65536 // per_warp // (entry["threads"] // 32)) == (
        160, 5120, 12, 2)  # fmt: skip
    text = page_words("chapters/v3.rst")
    assert "a warp takes 32 times that rounded up, 5,120, and 65,536 / 5,120 leaves room for 12 warps" in text


def test_v8_page_says_peers_have_not_run_only_while_the_sweep_has_no_peer_rows() -> None:
    """docs/chapters/v8.rst: Triton and QuACK "have not run on our GPU yet"; once a sweep row holds one, reword it."""
    data = results.load_default()
    if data is None:
        pytest.skip("no results file is committed")
    text = page_words("chapters/v8.rst")
    assert "but have not run on our GPU yet" in text
    timed = {impl for figure in results.sweep_runs(data) for impl in figure["rows"]}
    ours = set(versions.names()) | {results.CUBLAS}
    assert timed <= ours, f"peers were recorded ({sorted(timed - ours)}): reword the V8 page's sweep paragraph"


def test_v4_page_dram_drop_exceeds_what_the_tile_alone_saves() -> None:
    """docs/chapters/v4.rst: DRAM bytes fell by more than the quarter of loaded bytes the larger tile saves."""
    data = results.load_default()
    if data is None:
        pytest.skip("no results file is committed")
    text = " ".join((paths.DOCS_DIR / "chapters" / "v4.rst").read_text(encoding="utf-8").split())
    assert "The drop in DRAM bytes is larger than the tile's quarter" in text
    rows = data["ladder"]["rows"]
    v3, v4 = (rows[name].get("counters") or {} for name in ("v3", "v4"))
    if "dram_read_bytes" not in v3 or "dram_read_bytes" not in v4:
        pytest.skip("the ladder has no DRAM counters")

    def rows_per_output(config: dict[str, int]) -> float:  # operand rows a K step loads per output it computes
        return (config["block_m"] + config["block_n"]) / (config["block_m"] * config["block_n"])

    tile_ratio = rows_per_output(rows["v4"]["config"]) / rows_per_output(rows["v3"]["config"])
    assert tile_ratio == 0.75  # the page's "a quarter fewer bytes" (128 x 128 to 128 x 256)
    assert v4["dram_read_bytes"] < tile_ratio * v3["dram_read_bytes"]
    assert v4["l2_hit_pct"] > v3["l2_hit_pct"]  # the page: the higher hit rate
