"""The V4 tile raster: the pure-Python model, and the kernel's own order checked against it on a GPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tilus
from tilus import int32

from matmul_bench.kernels import load
from matmul_bench.protocol import BuildSpec

common = load("common")  # the Tilus 0.2.0 fixes (applied on import) and the correctness check
# Not bound to the name "raster": the probe kernel below assigns a local of that name, and Tilus refuses to rebind
# a module-level module.
_raster_module = load("raster")
TileRaster, panels_per_wave = _raster_module.TileRaster, _raster_module.panels_per_wave
raster_order, tile_of = _raster_module.raster_order, _raster_module.tile_of


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "hopper_matmul"

# (num_tiles_m, num_tiles_n, swizzle_size): square and ragged grids, 1x1, 1xN, Nx1, swizzle sizes that
# divide num_tiles_m, that do not, that equal it, and that exceed it.
GRIDS = [
    (1, 1, 1),
    (1, 1, 8),
    (1, 9, 4),
    (9, 1, 4),
    (13, 1, 1),
    (1, 13, 1),
    (8, 8, 8),
    (16, 5, 8),
    (17, 5, 8),
    (23, 7, 8),
    (7, 11, 3),
    (10, 10, 4),
    (3, 4, 8),
    (5, 3, 5),
    (64, 64, 8),
    (63, 32, 16),
]


@pytest.mark.parametrize(("tiles_m", "tiles_n", "swizzle"), GRIDS)
def test_v4_raster_order_is_a_bijection(tiles_m: int, tiles_n: int, swizzle: int) -> None:
    order = raster_order(tiles_m, tiles_n, swizzle)
    assert len(order) == tiles_m * tiles_n
    assert sorted(order) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]


def test_v4_raster_order_is_a_bijection_for_every_small_grid() -> None:
    for tiles_m in range(1, 13):
        for tiles_n in range(1, 13):
            for swizzle in range(1, 15):
                order = raster_order(tiles_m, tiles_n, swizzle)
                assert len(set(order)) == tiles_m * tiles_n, (tiles_m, tiles_n, swizzle)
                assert all(0 <= m < tiles_m and 0 <= n < tiles_n for m, n in order), (tiles_m, tiles_n, swizzle)


@pytest.mark.parametrize(("tiles_m", "tiles_n"), [(1, 1), (1, 7), (7, 1), (5, 9), (32, 32)])
def test_swizzle_size_1_is_row_major(tiles_m: int, tiles_n: int) -> None:
    assert raster_order(tiles_m, tiles_n, 1) == [divmod(b, tiles_n) for b in range(tiles_m * tiles_n)]


def _walk(tiles_m: int, tiles_n: int, swizzle: int) -> list[tuple[int, int]]:
    """The order written as nested loops: groups of rows, then columns, then the rows of the group."""
    order = []
    for first_m in range(0, tiles_m, swizzle):
        rows = range(first_m, min(first_m + swizzle, tiles_m))
        order += [(m, n) for n in range(tiles_n) for m in rows]
    return order


@pytest.mark.parametrize(("tiles_m", "tiles_n", "swizzle"), GRIDS)
def test_raster_walks_groups_of_rows_column_by_column(tiles_m: int, tiles_n: int, swizzle: int) -> None:
    assert raster_order(tiles_m, tiles_n, swizzle) == _walk(tiles_m, tiles_n, swizzle)


def test_consecutive_blocks_in_a_full_group_share_a_tile_column() -> None:
    tiles_m, tiles_n, swizzle = 20, 6, 8  # two full groups of 8 rows, then a group of 4
    order = raster_order(tiles_m, tiles_n, swizzle)
    for group in range(2):
        for n in range(tiles_n):
            start = group * swizzle * tiles_n + n * swizzle
            run = order[start : start + swizzle]
            assert {tn for _, tn in run} == {n}  # one B panel for swizzle consecutive blocks
            assert [tm for tm, _ in run] == list(range(group * swizzle, (group + 1) * swizzle))


def test_last_group_is_narrower_when_swizzle_does_not_divide_the_tile_rows() -> None:
    tiles_m, tiles_n, swizzle = 20, 6, 8
    last = raster_order(tiles_m, tiles_n, swizzle)[2 * swizzle * tiles_n :]
    assert len(last) == 4 * tiles_n
    for n in range(tiles_n):
        assert last[4 * n : 4 * n + 4] == [(16, n), (17, n), (18, n), (19, n)]


def test_swizzle_larger_than_the_grid_is_one_column_major_group() -> None:
    assert raster_order(3, 4, 8) == [(m, n) for n in range(4) for m in range(3)]


def test_swizzled_waves_read_fewer_b_panels_than_row_major() -> None:
    # 8192^3 with 128x256 tiles: 64 x 32 tiles; one wave is 132 blocks (one per SM).
    row_major = panels_per_wave(64, 32, 1, 132)
    swizzled = panels_per_wave(64, 32, 8, 132)
    assert row_major[0] == (5, 32)  # 132 blocks cover four tile rows and a bit: every B panel
    assert swizzled[0] == (8, 17)  # 8 A panels, 17 B panels
    assert sum(a + b for a, b in swizzled) < sum(a + b for a, b in row_major)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 4, 0, 1), "num_tiles_n"),
        ((0, 4, 4, 0), "swizzle_size"),
        ((0, -1, 4, 8), "num_tiles_m"),
        ((16, 4, 4, 8), "outside"),
        ((-1, 4, 4, 8), "outside"),
    ],
)
def test_bad_raster_arguments_raise_value_error(args: tuple[int, int, int, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tile_of(*args)


def test_raster_model_imports_without_tilus() -> None:
    code = (
        "import sys; sys.modules['tilus'] = None\n"  # any `import tilus` now raises ImportError
        "import raster\n"
        "assert raster.tile_of(5, 3, 4, 2) == (1, 2), raster.tile_of(5, 3, 4, 2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES)}  # the kernel folder, as running a script there gives
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


class RasterProbe(tilus.Script):
    """Each block writes the tile that TileRaster gives it: the kernels' raster, read back."""

    def __init__(self, swizzle_size: int):
        super().__init__()
        self.swizzle_size = swizzle_size

    def __call__(self, num_tiles_m: int32, num_tiles_n: int32, out_ptr: ~int32):
        self.attrs.blocks = num_tiles_m * num_tiles_n
        self.attrs.warps = 1
        raster = TileRaster(num_tiles_m, num_tiles_n, self.swizzle_size)
        tile_m, tile_n = raster.tile_of(self.blockIdx.x)
        out = self.global_view(out_ptr, dtype=int32, shape=[num_tiles_m * num_tiles_n, 2])
        coords = self.register_tensor(dtype=int32, shape=[1, 2], init=lambda i, j: tile_m + (tile_n - tile_m) * j)
        self.store_global(out, coords, offsets=[self.blockIdx.x, 0])


# Grids whose divisors (swizzle * num_tiles_n, the last group's rows, num_tiles_n) include values such as
# 7, 56 and 448 (N = 14336 with 256-wide tiles), for which a 32-bit magic multiplier needs care.
# Each swizzle size is a kernel of its own to compile, so the GPU checks keep to four sizes (1, 3, 8, 16).
GPU_GRIDS = [g for g in GRIDS if g[2] in (1, 3, 8, 16)]
GPU_GRIDS += [(64, 56, 8), (7, 56, 8), (15, 7, 8), (31, 112, 8), (96, 14, 1), (50, 21, 16)]


@pytest.mark.gpu
@pytest.mark.parametrize(("tiles_m", "tiles_n", "swizzle"), GPU_GRIDS)
def test_kernel_raster_order_matches_the_model(tiles_m: int, tiles_n: int, swizzle: int) -> None:
    import torch

    out = torch.full((tiles_m * tiles_n, 2), -1, dtype=torch.int32, device="cuda")
    RasterProbe(swizzle)(tiles_m, tiles_n, out)
    torch.cuda.synchronize()
    assert [tuple(t) for t in out.tolist()] == raster_order(tiles_m, tiles_n, swizzle)


AWKWARD = (896, 1792, 200)
AWKWARD_VERSIONS = ["matmul_v4", "matmul_v5", "matmul_v6"]


def awkward_spec(version: str, swizzle: int) -> BuildSpec:
    config = {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": swizzle}
    cls = "MatmulV" + version.removeprefix("matmul_v")
    return BuildSpec.of(file=str(EXAMPLES / f"{version}.py"), cls=cls, config=config, shapes=(AWKWARD,))


@pytest.fixture(scope="module")
def awkward_builds() -> None:
    """Build the six pinned kernels in parallel processes first (Tilus caches them on disk)."""
    from matmul_bench import jobs

    jobs.build_all([awkward_spec(v, s) for v in AWKWARD_VERSIONS for s in (1, 8)], jobs=6, timeout_s=900)


@pytest.mark.gpu
@pytest.mark.usefixtures("awkward_builds")
@pytest.mark.parametrize("version", AWKWARD_VERSIONS)
@pytest.mark.parametrize("swizzle", [1, 8])
def test_kernels_are_exact_on_a_grid_whose_raster_divisors_are_awkward(version: str, swizzle: int) -> None:
    """896 x 1792 with 128 x 256 tiles: 7 x 7 tiles, so the divisors are 7, 8 and 56 (or 7 without swizzling)."""
    from matmul_bench import kernels

    spec = awkward_spec(version, swizzle)
    result = common.check(kernels.make_kernel(spec.file, spec.cls, spec.config), *AWKWARD)
    assert result.ok, f"{result.bad} wrong elements, max |err| {result.max_abs_err}"
