"""cuBLAS's kernel per sweep and field shape: what its nvjet name encodes, recorded in those figures."""

from __future__ import annotations

from pathlib import Path

import fake_results
from matmul_bench import baseline
from matmul_data import results


def test_an_nvjet_name_gives_its_tile_k_tile_stages_and_cluster() -> None:
    assert baseline.decode("nvjet_sm90_hsh_320x128_64x3_1x2_h_bz_coopB_TNT") == {
        "tile": [320, 128], "block_k": 64, "stages": 3, "cluster": [1, 2]}  # fmt: skip
    assert baseline.decode("sm90_xmma_gemm_f16f16_f16f32") is None


def test_recorded_names_land_on_the_sweep_figure_of_their_shape(tmp_path: Path) -> None:
    data = fake_results.fake_file()
    path = tmp_path / "results.json"
    results.write_atomic(path, fake_results.typed(data))
    first = data["sweep"][0]["shape"]
    key = f"{first['m']}x{first['n']}x{first['k']}"
    found = {key: {"kernel": "nvjet_sm90_hsh_192x192_64x4_2x1_v_bz_coopB_TNN"}, "1x2x3": {"kernel": "other"}}
    at_first = [f for f in data["sweep"] if f["shape"] == first]  # with the peers' figure there, if any
    assert baseline.record(path, found) == len(at_first) >= 1
    recorded = results.load(path)
    assert recorded["sweep"][0]["cublas_kernel"]["decoded"]["cluster"] == [2, 1]
    assert all(("cublas_kernel" in figure) == (figure["shape"] == first) for figure in recorded["sweep"])


def test_recorded_names_land_on_the_field_figures_too(tmp_path: Path) -> None:
    data = fake_results.fake_file()
    data["field"] = fake_results.fake_sweep(((4096, 50257, 1600),), peers=False)
    path = tmp_path / "results.json"
    results.write_atomic(path, fake_results.typed(data))
    assert baseline.record(path, {"4096x50257x1600": {"kernel": "nvjet_sm90_hsh_128x256_64x4_1x2_h_bz_TNT"}}) == 1
    assert results.load(path)["field"][0]["cublas_kernel"]["decoded"]["tile"] == [128, 256]
