"""V9's extension of the tile model (examples/hopper_matmul/tile_model.py, item 5): clusters of two sharing an operand.

Plain Python, no Tilus and no torch: pairs as units of the waves, the L2 bytes a pair saves, the fit of CLUSTER_COST
to the development check of the field set's fitted half, and the choices the fitted model makes.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest

from conftest import ROOT
from matmul_bench import kernels
from matmul_bench.plan import SWEEP_SHAPES
from matmul_data import field, versions

tile_model = kernels.load("tile_model")
BY_NAME = {tile.name: tile for tile in tile_model.CANDIDATES}
FIT_LOG = ROOT / "plots" / "results" / "logs" / "v9-check-fitted-2026-12-04.json"


def test_v9s_menu_is_every_tile_unshared_and_shared_but_a_is_shared_only_by_two_consumer_groups() -> None:
    menu = [(e.tile.name, e.share) for e in tile_model.estimates_shared(4096, 4096, 4096)]
    assert menu[:3] == [("128x256", "none"), ("128x256", "b"), ("128x256", "a")]  # no cluster first: it wins ties
    assert ("192x192", "a") not in menu and ("192x192", "b") in menu  # A's halves are the two groups' slabs
    assert len(menu) == 3 * len(tile_model.CANDIDATES) - 1


def test_without_a_cluster_the_estimate_is_v8s() -> None:
    for shape in [*SWEEP_SHAPES, *(f.shape for f in field.FIELD)]:
        for tile in tile_model.CANDIDATES:
            alone = tile_model.estimate(tile, *shape)
            assert alone.share == "none" and alone.cluster_size == 1 and alone.units == alone.tiles
            assert alone.cost_per_flop == tile.cost_per_flop
        assert tile_model.choose(*shape) in tile_model.CANDIDATES  # V8's rule runs unchanged beside V9's


def test_a_pair_is_one_unit_of_the_waves_and_a_pair_half_past_m_counts_whole() -> None:
    tile = BY_NAME["128x256"]
    # 1000 rows are 8 tile rows (4 pairs); 1100 are 9 (5 pairs, the last one's second tile past M).
    assert tile_model.estimate(tile, 1000, 4096, 4096, share="b").units == 4 * 16
    assert tile_model.estimate(tile, 1100, 4096, 4096, share="b").units == 5 * 16
    pairs = tile_model.estimate(tile, 8192, 8192, 8192, share="b")
    assert (pairs.slots, pairs.units, pairs.rounds) == (66, 32 * 32, math.ceil(1024 / 66))
    along_n = tile_model.estimate(tile, 8192, 8192, 8192, share="a")
    assert along_n.units == 64 * 16 and along_n.fill == pytest.approx(8192 * 8192 / (16 * 132 * 128 * 256))


def test_sharing_b_at_128x256_loads_a_third_fewer_bytes_per_flop() -> None:
    tile = BY_NAME["128x256"]
    alone, shared = (tile_model.estimate(tile, 8192, 8192, 8192, share=s) for s in ("none", "b"))
    assert alone.l2_bytes_per_flop == pytest.approx(1 / 128 + 1 / 256)
    assert shared.l2_bytes_per_flop == pytest.approx(2 / 256)
    assert shared.l2_bytes_per_flop / alone.l2_bytes_per_flop == pytest.approx(2 / 3)
    # Rows off the sectors: B is loaded once per pair, A once per tile (rows past M and N not at all).
    ragged = tile_model.estimate(tile, 4096, 4096, 5000, share="b")
    assert ragged.loaded_bytes == 2 * 5000 * (16 * 4096 + 16 * 4096)
    assert tile_model.estimate(tile, 4096, 4096, 5000).loaded_bytes == 2 * 5000 * (16 * 4096 + 32 * 4096)


def log_time_rms(cluster_cost: float) -> float:
    """The fit's criterion: the rms of log(measured / predicted) over every (tile, sharing) at the fitted shapes
    (each shape's scale free), the odd-N head left out (the docstring says why)."""
    data = json.loads(FIT_LOG.read_text(encoding="utf-8"))
    squares = []
    original = tile_model.CLUSTER_COST
    try:
        tile_model.CLUSTER_COST = cluster_cost
        for timing in data["timings"]:
            m, n, k = timing["shape"]
            if n % 8:
                continue
            pairs = []
            for name, ms in timing["ms"].items():
                if name.startswith("v9-"):
                    _, tile, share = name.split("-")
                    predicted = tile_model.estimate(BY_NAME[tile], m, n, k, data.get("num_sms", 132), share).time
                    pairs.append(math.log(statistics.median(ms)) - math.log(predicted))
            offset = statistics.mean(pairs)
            squares += [(p - offset) ** 2 for p in pairs]
    finally:
        tile_model.CLUSTER_COST = original
    return math.sqrt(statistics.mean(squares))


def test_cluster_cost_is_the_least_squares_fit_to_the_fitted_halfs_development_check() -> None:
    data = json.loads(FIT_LOG.read_text(encoding="utf-8"))
    fitted = {f.shape for f in field.half(field.FITTED)}
    assert {tuple(t["shape"]) for t in data["timings"]} <= fitted  # fitted on that half only
    grid = [c / 100 for c in range(0, 51)]
    best = min(grid, key=log_time_rms)
    assert tile_model.CLUSTER_COST == best
    assert log_time_rms(best) < 0.04


def test_the_fitted_model_shares_only_where_rows_are_off_the_sectors() -> None:
    for shape in [*SWEEP_SHAPES, *(f.shape for f in field.FIELD)]:
        choice = tile_model.choose_shared(*shape)
        assert (choice.share != "none") == (shape[2] % tile_model.SECTOR_ELEMENTS != 0), shape
        if choice.share == "none":
            assert choice.tile == tile_model.choose(*shape)  # V9 is V8 there


def test_v9s_tuned_is_what_its_rule_picks_at_8192_cubed() -> None:
    choice = tile_model.choose_shared(8192, 8192, 8192)
    tuned = versions.read_tuned(ROOT / "examples" / "hopper_matmul" / "matmul_v9.py")
    assert tuned == {**choice.tile.config, "block_k": tile_model.BLOCK_K, "swizzle_size": 16, "share": choice.share}


def test_a_bad_share_is_refused() -> None:
    with pytest.raises(ValueError, match="share must be one of"):
        tile_model.estimate(BY_NAME["128x256"], 1024, 1024, 1024, share="both")
