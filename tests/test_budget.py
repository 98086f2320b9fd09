"""The budget box's arithmetic: blocks per SM from registers, shared memory and threads; intensity; waves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matmul_data import budget
from matmul_data.budget import Build
from matmul_data.builds import BuildRecord

TILE_128x256 = {"block_m": 128, "block_n": 256, "block_k": 64}
SHAPE_8192 = (8192, 8192, 8192)


def test_registers_are_counted_per_warp_in_units_of_256() -> None:
    # 93 registers round up to 96 per thread: 3,072 per warp, 21 warps of 65,536, so 5 blocks of 4 warps.
    per_sm, limited_by, by_resource = budget.blocks_per_sm(Build(128, 93, 24704, None))
    assert (per_sm, limited_by) == (5, "registers")
    assert by_resource == {"registers": 5, "shared memory": 9, "threads": 16, "the 32-block limit": 32}


def test_shared_memory_limit_counts_the_reserved_kilobyte_per_block() -> None:
    # 98,432 + 1,024 bytes per block: two fit in 228 KB (233,472 bytes), three would need 298,368.
    per_sm, limited_by, _ = budget.blocks_per_sm(Build(128, 154, 98432, None))
    assert (per_sm, limited_by) == (2, "shared memory")


def test_a_tie_names_every_limiting_resource() -> None:
    _, limited_by, _ = budget.blocks_per_sm(Build(160, 154, 98432, None))
    assert limited_by == "registers and shared memory"


def test_persistent_grid_of_132_blocks_has_a_partial_last_wave_at_8192() -> None:
    b = budget.budget(Build(288, 154, 213120, 132), TILE_128x256, SHAPE_8192, sm_count=132)
    assert b.tiles == 2048 and b.resident_blocks == 132
    assert b.waves == pytest.approx(2048 / 132)
    assert b.last_wave_fraction == pytest.approx(68 / 132)  # 2048 = 15 x 132 + 68


def test_a_full_last_wave_reports_one() -> None:
    b = budget.budget(Build(288, 154, 147584, None), TILE_128x256, (128 * 132, 256, 64), sm_count=132)
    assert (b.waves, b.last_wave_fraction) == (1.0, 1.0)


def test_intensity_is_the_harmonic_tile_ratio() -> None:
    b = budget.budget(Build(288, 154, 147584, None), TILE_128x256, SHAPE_8192, sm_count=132)
    assert b.flop_per_byte == pytest.approx(128 * 256 / (128 + 256))  # 2*bm*bn*bk FLOP / ((bm+bn)*bk*2) bytes


def test_a_version_missing_from_the_build_record_is_named(tmp_path: Path) -> None:
    with pytest.raises(budget.BudgetError, match="v9 is not in the build record"):
        budget.build_of(budget.load_builds().put(versions={}), "v9")
    with pytest.raises(budget.BudgetError, match="no build record"):
        budget.load_builds(tmp_path / "sm_90a.json")


def test_the_committed_build_record_covers_every_version() -> None:
    from matmul_data import versions

    record = budget.load_builds()
    assert sorted(record.versions) == sorted(versions.names())


def test_the_build_record_is_not_stale_for_any_kernel_file() -> None:
    from matmul_data import paths, versions

    record = budget.load_builds()
    hashes = {v.name: budget.files_hash([v.path.relative_to(paths.ROOT).as_posix()]) for v in versions.all_versions()}
    stale = [name for name, digest in hashes.items() if record.versions[name].source != digest]
    assert stale == [], "kernel files changed since the record: run `python -m matmul_bench buildcheck --record`"


def test_the_recorded_ladder_measured_each_kernel_file_s_tuned_configuration() -> None:
    from matmul_data import results, versions

    data = results.load_default()
    rows = ((data or {}).get("ladder") or {}).get("rows", {})
    if not rows:
        pytest.skip("no recorded ladder")
    tuned = {v.name: v.tuned for v in versions.all_versions()}
    differ = {name: (row["config"], tuned[name]) for name, row in rows.items() if name in tuned}
    assert {n: pair for n, pair in differ.items() if pair[0] != pair[1]} == {}


def test_the_intensity_s_yardstick_is_the_fastest_profiled_l2_rate_crossbar_bytes_over_time(tmp_path: Path) -> None:
    preamble = "==PROF== Connected\nprobe 3072 7168 5056 {}\n"
    columns = f'"ID","Kernel Name","{budget.DURATION_NS}","{budget.L2_BYTES}","{budget.L2_PEAK_PCT}"\n'
    units = '"","","ns","byte","%"\n'
    for k, ns, pct in ((5000, "2,000,000", "90.0"), (5056, "1,000,000", "70.0")):
        text = f'{preamble}{columns}{units}"0","kernel","{ns}","5,000,000,000","{pct}"\n'
        (tmp_path / f"ncu-v8-128x192-3072x7168x{k}-2026-12-02.csv").write_text(text, encoding="utf-8")
    rate = budget.l2_rate(tmp_path)
    assert rate is not None
    assert rate.bytes_per_second == pytest.approx(5e12)  # 5 GB in 1 ms, the faster of the two
    assert (rate.shape, rate.peak_pct) == ((3072, 7168, 5056), 70.0)
    assert budget.l2_rate(tmp_path / "none") is None


def test_the_committed_ncu_profiles_give_the_yardstick_and_its_bytes_are_the_tiles_operand_bytes() -> None:
    rate = budget.l2_rate()
    assert rate is not None, "no ncu-v8-*.csv in plots/results/logs"
    m, n, k = rate.shape
    tiles = -(-m // 128) * -(-n // 192)  # the profiled V8 ran 128 x 192 tiles
    operand_bytes = tiles * (128 + 192) * k * 2
    assert rate.log.startswith("ncu-v8-128x192-")
    assert rate.bytes == operand_bytes  # the crossbar carried exactly the operand bytes the tiles load, nothing else
    assert 5e12 < rate.bytes_per_second < 20e12


def test_the_committed_build_record_round_trips_byte_for_byte() -> None:
    raw = budget.BUILD_RECORD.read_bytes()
    record = BuildRecord.from_json(json.loads(raw))
    assert (json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n").encode() == raw  # as buildcheck writes it
    assert record.versions["v9"].threads > 0 and record.extras["v9-share-b"].of == "v9"


def test_a_build_record_with_an_unknown_or_missing_key_is_refused_by_name(tmp_path: Path) -> None:
    data = json.loads(budget.BUILD_RECORD.read_bytes())
    data["versions"]["v3"]["registerz"] = data["versions"]["v3"].pop("registers")
    (tmp_path / "sm_90a.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(budget.BudgetError, match=r"versions\.v3\.registers"):
        budget.load_builds(tmp_path / "sm_90a.json")
