"""The build facts the chapters cite: the sm_90a build record holds them for every version and extra build, is
not stale, and the pages print them (and the sizes computed from each version's TUNED) through facts."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from docutils import nodes

from matmul_data import budget, paths, results, versions
from matmul_site import facts, numfmt
from matmul_site.numfmt import NOT_MEASURED
from matmul_site.sphinx import fact_blocks

ENTRY_KEYS = {
    "threads", "shared_bytes", "persistent_blocks", "source", "registers", "spill_stores", "spill_loads",
    "stack_bytes", "barriers", "advisories", "sass", "hgmma", "depbar", "ptxas",
}  # fmt: skip


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return budget.load_builds()


def test_every_version_and_extra_build_holds_every_build_fact(record: dict[str, Any]) -> None:
    entries = {**record["versions"], **record["extras"]}
    assert sorted(record["versions"]) == sorted(versions.names())
    for name, entry in entries.items():
        assert ENTRY_KEYS <= set(entry), f"{name} lacks {ENTRY_KEYS - set(entry)}"
        assert set(entry["sass"]) == set(budget.SASS_FAMILIES), name
        assert "Compile time" not in entry["ptxas"] and f"Used {entry['registers']} registers" in entry["ptxas"]


def test_no_extra_build_is_stale(record: dict[str, Any]) -> None:
    stale = [name for name, e in record["extras"].items() if e["source"] != budget.files_hash(e["files"])]
    assert stale == [], "files changed since the record: run `python -m matmul_bench buildcheck --record`"


def test_a_changed_file_makes_an_extra_build_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kernel.py").write_text("one")
    helpers = tmp_path / "examples" / "hopper_matmul"
    helpers.mkdir(parents=True)
    for name in budget.HELPERS:
        (helpers / name).write_text(name)
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "KERNEL_DIR", helpers)
    before = budget.files_hash(["kernel.py"])
    (tmp_path / "kernel.py").write_text("two")
    assert budget.files_hash(["kernel.py"]) != before


def test_build_facts_print_the_record(record: dict[str, Any]) -> None:
    data = results.load_default()
    v7, streamk = record["versions"]["v7"], record["extras"]["v7-streamk"]
    assert facts.render("v7.registers", data) == str(v7["registers"])
    assert facts.render("v7-streamk.stack_frame", data) == f"{streamk['stack_bytes']:,} bytes"
    assert facts.render("v7.sass_utmastg", data) == str(v7["sass"]["UTMASTG"])
    assert facts.render("v5.depbar_1", data) == str(record["versions"]["v5"]["depbar"]["1"])
    assert facts.render("v4.depbar_1", data) == "0"  # V4 never waits with a group left in flight
    assert facts.render("v5-no-final-wait.advisories", data) == ", ".join(record["extras"]["v5-no-final-wait"][
        "advisories"])  # fmt: skip
    assert facts.render("v9.registers", data) == NOT_MEASURED  # no such build: the fact test fails the page
    with pytest.raises(facts.UnknownFact):
        facts.render("v7.sass_nonsense", data)


def test_the_recorded_spills_read_as_words() -> None:
    assert facts.spills_text({"spill_stores": 0, "spill_loads": 0}) == "no spills"
    assert facts.spills_text({"spill_stores": 4, "spill_loads": 8}) == "4 bytes of spill stores and 8 of spill loads"


def test_a_stage_is_computed_from_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    data = results.load_default()
    tuned = versions.get("v6").tuned
    stage = (tuned["block_m"] + tuned["block_n"]) * tuned["block_k"] * 2
    assert facts.render("v6.stage", data) == numfmt.kb_text(stage) == "48 KB"  # 128 x 64 + 256 x 64 fp16
    assert facts.render("v6.c_tile", data) == "64 KB"
    assert facts.render("v6.ring_plus_one_and_c", data) == "256 KB"  # 4 x 48 + 64: over the 227 KB of a block
    other = {"block_m": 64, "block_n": 128, "block_k": 32, "num_stages": 2}
    monkeypatch.setattr(versions, "get", lambda name: types.SimpleNamespace(tuned=other))
    assert facts.render("v6.stage", data) == "12 KB"  # (64 + 128) x 32 x 2 bytes
    assert facts.render("v6.ring", data) == "24 KB"


def test_kb_prints_whole_kilobytes_without_decimals() -> None:
    assert (numfmt.kb_text(49152), numfmt.kb_text(213120)) == ("48 KB", "208.1 KB")


class _Directive:
    """What a table fact needs of a directive: its argument, the environment's dependency list, errors."""

    def __init__(self, name: str) -> None:
        self.arguments = [name]
        self.env = types.SimpleNamespace(note_dependency=lambda path: None)

    def error(self, message: str) -> Exception:
        return RuntimeError(message)


def _block(name: str) -> list[nodes.Node]:
    found, args = facts.find(name, fact_blocks.BLOCKS)
    return found.render(_Directive(name), results.load_default(), **args)


def _rows(table: nodes.Node) -> list[list[str]]:
    return [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]


def test_build_delta_shows_what_moved_and_names_the_rest(record: dict[str, Any]) -> None:
    before, after = record["versions"]["v6"], record["versions"]["v7"]
    table, unchanged, caption = _block("v7.build_delta")
    rows = _rows(table)
    assert rows[0] == ["Build fact", "V6", "V7"]
    assert ["Registers per thread (ptxas)", str(before["registers"]), str(after["registers"])] in rows
    assert all(old != new for _, old, new in rows[1:])
    assert f"Threads per block {after['threads']}" in unchanged.astext()
    assert "buildcheck --record" in caption.astext() and len(caption.astext().split()) < 40


def test_the_first_version_shows_its_own_build_facts(record: dict[str, Any]) -> None:
    rows = _rows(_block(f"{versions.names()[0]}.build_delta")[0])
    assert ["HMMA (mma.sync)", str(record["versions"]["v0"]["sass"]["HMMA"])] in rows


def test_ptxas_block_quotes_the_whole_recorded_output(record: dict[str, Any]) -> None:
    (block,) = _block("v5-no-final-wait.ptxas")
    assert block.astext() == record["extras"]["v5-no-final-wait"]["ptxas"].rstrip("\n")
    assert "(C7517)" in block.astext() and "(C7518)" in block.astext()


def test_the_record_file_is_the_one_the_pages_read() -> None:
    assert json.loads(budget.BUILD_RECORD.read_text())["arch"] == "sm_90a"
