"""The V8 chapter's table of tile choices is the tile model's arithmetic at the shapes the page names."""

from __future__ import annotations

import pytest

import tile_model
from matmul_site.sphinx import tile_choices


def test_the_table_gives_v7s_tile_and_the_models_pick_with_tiles_waves_and_rounds() -> None:
    (row,) = tile_choices.rows([(5120, 5120, 5120)])
    assert row[0] == "5120³"
    assert row[1] == "800 tiles, 6.06 waves in 7 rounds: 0.87 of the slots"  # 40 x 20 tiles of 128 x 256 on 132 SMs
    assert row[2] == "192 × 192"  # 27 x 27 tiles; 5120 = 26 x 192 + 128
    assert row[3] == "729 tiles, 5.52 waves in 6 rounds: 0.92 of the slots; last column 128 of 192 wide"
    chosen = tile_model.estimate(tile_model.choose(5120, 5120, 5120), 5120, 5120, 5120)
    assert row[4] == f"{7.0 / chosen.time:.2f}"


def test_at_3000x5000_the_table_shows_v7s_last_column_and_keeps_v7s_tile() -> None:
    (row,) = tile_choices.rows([(3000, 5000, 4096)])
    assert row[1] == "480 tiles, 3.64 waves in 4 rounds: 0.91 of the slots; last column 136 of 256 wide"
    assert row[2] == "128 × 256" and row[4] == "1.00"


def test_where_v7s_tile_fills_the_machine_the_model_keeps_it_and_predicts_no_gain() -> None:
    (row,) = tile_choices.rows([(8192, 8192, 8192)])
    assert row[2] == "128 × 256" and row[4] == "1.00"


@pytest.mark.parametrize(("text", "shape"), [("4096", (4096,) * 3), ("3000x5000x4096", (3000, 5000, 4096))])
def test_shapes_are_written_as_a_cube_side_or_m_x_n_x_k(text: str, shape: tuple[int, int, int]) -> None:
    assert tile_choices.parse_shape(text) == shape


def test_anything_else_is_refused_with_the_forms_it_takes() -> None:
    with pytest.raises(ValueError, match="write 4096"):
        tile_choices.parse_shape("4096x4096")


def test_the_v8_page_quotes_the_models_constant_and_stages_as_the_model_has_them() -> None:
    from matmul_data import paths

    page = (paths.DOCS_DIR / "chapters" / "v8.rst").read_text(encoding="utf-8")
    assert f":math:`c = {tile_model.OPERAND_BYTE_COST}`" in page
    assert f":math:`e = {tile_model.EDGE_COST}`" in page
    # tile_model.Estimate.edge_rounds: the edge charge is multiplied by ceil(ceil(M / bm) / SMs).
    assert r"e \, f^2 \left\lceil \frac{\lceil M / b_m \rceil}{132} \right\rceil" in page
    stages = [str(t.num_stages) for t in tile_model.CANDIDATES]
    assert f"{', '.join(stages[:-1])} and {stages[-1]}" in page
