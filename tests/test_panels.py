"""The panel model's numbers that V4's and V6's pages quote (matmul_site.panels)."""

from __future__ import annotations

from matmul_data import budget
from matmul_site import panels

SHAPE = (8192, 8192, 8192)
TILE = {"block_m": 128, "block_n": 256, "block_k": 64}


def test_row_major_waves_read_every_b_panel_and_groups_of_16_read_nine() -> None:
    row_major = panels.launch(TILE, SHAPE, 132, 1)
    grouped = panels.launch(TILE, SHAPE, 132, 16)
    assert row_major.typical == (5, 32) and grouped.typical == (16, 9)
    assert (row_major.a_panel_bytes, row_major.b_panel_bytes) == (2 * 2**20, 4 * 2**20)
    assert grouped.total_bytes < row_major.total_bytes
    assert len(row_major.waves) == len(grouped.waves) == 16  # 2048 tiles over 132 blocks: 15 full waves and a tail


def test_a_grid_without_a_raster_walks_down_m_first() -> None:
    square = {"block_m": 128, "block_n": 128, "block_k": 64}
    down_m = panels.launch(square, (8192, 4096, 8192), 100, None)
    across_n = panels.launch(square, (4096, 8192, 8192), 100, 1)  # the transposed problem, row by row
    assert down_m.waves == [(b, a) for a, b in across_n.waves]


def test_a_launch_counts_each_panel_of_each_wave_once() -> None:
    launch = panels.launch(TILE, (256, 512, 64), 3, 1)  # 2 x 2 tiles; waves of 3 then 1
    assert launch.waves == [(2, 2), (1, 1)]
    assert launch.total_bytes == (2 + 1) * 128 * 64 * 2 + (2 + 1) * 256 * 64 * 2


def test_the_pages_values_follow_the_build_record() -> None:
    record = budget.load_builds()
    found = dict(panels.panel_values(record, SHAPE, 132))
    assert found["panels.v4.blocks"] == "132" and found["panels.v4.count"] == "37"
    assert found["panels.v6.launch_mb"] == found["panels.v4-sw16.launch_mb"]  # V6 walks V4's tile in groups of 16
    record = record.put(versions={name: facts for name, facts in record.versions.items() if name != "v0"})
    assert not any(name.startswith("panels.v0.") for name, _ in panels.panel_values(record, SHAPE, 132))
