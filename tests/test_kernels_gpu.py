"""Every kernel version computes C = A @ B^T correctly on a Hopper GPU, and refuses bad input without touching C.

Each (version, shape) runs on fresh random inputs into a NaN-poisoned C and is compared element by element
with a float64 reference (common.check). The shapes are the kernels' own (common.CHECK_SHAPES) and a seeded draw
over every N % 8, ragged and whole K-tiles, K from 8 to past 4096, and M from a few rows to past 8192 (DRAWN_SHAPES).
A failure names the shape, the first wrong element and the input seed (HOPPER_MATMUL_SEED=<seed> reruns those
inputs). Versions are found by convention, so later versions are covered too.
Each version runs its file's own configuration (TUNED, or config_for at each shape); every (version, shape) is
built up front in parallel processes (matmul_bench.jobs): Tilus caches the builds on disk, so the tests load
them instead of compiling every configuration of the autotune space one after another (about 10 s each).
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from matmul_bench import jobs
from matmul_bench import kernels as loader
from matmul_bench.protocol import BuildAnswer, BuildSpec
from matmul_data import versions as registry

common = loader.load("common")

# Every test here needs a Hopper GPU (marked one by one) but the CPU guard at the end, which runs everywhere.

KERNEL_DIR = Path(__file__).resolve().parent.parent / "examples" / "hopper_matmul"


def versions() -> list[int]:
    return [v.number for v in registry.all_versions(KERNEL_DIR)]


def spec(version: int, shapes: list[tuple[int, int, int]]) -> BuildSpec:
    return BuildSpec.of(file=str(KERNEL_DIR / f"matmul_v{version}.py"), cls=f"MatmulV{version}", config=None,
                        shapes=tuple(shapes), check=False)  # fmt: skip


def drawn_shapes(seed: int = 27) -> list[tuple[int, int, int]]:
    """One shape per N % 8 (0 to 7), M and K drawn so that the eight cover tiny, ragged and large M and every kind
    of K: 8 (one partial K-tile), ragged K-tiles below 1024, whole K-tiles, and ragged and whole K past 4096."""
    rng = random.Random(seed)
    ms = [rng.randint(1, 15), rng.randint(65, 127), 2 * rng.randint(500, 1500) + 1, rng.randint(2049, 4095),
          8192 + rng.randint(1, 255)]  # fmt: skip
    ks = [8, 64 * rng.randint(1, 8) + 8 * rng.randint(1, 7), 64 * rng.randint(8, 40),
          4096 + 8 * rng.randint(1, 7), 64 * rng.randint(65, 80)]  # fmt: skip
    rows = [1, 0, 2, 4, 3, 2, 0, 4]  # the M of each N % 8: a tiny M meets odd and even N
    return [(ms[rows[r]], 8 * rng.randint(32, 640) + r, ks[r % len(ks)]) for r in range(8)]


DRAWN_SHAPES = drawn_shapes()


def input_seed() -> int:
    """Fresh inputs every run, unless HOPPER_MATMUL_SEED names the seed of a failure to reproduce."""
    chosen = os.environ.get("HOPPER_MATMUL_SEED")
    return int(chosen) if chosen else int.from_bytes(os.urandom(4), "little")


@pytest.fixture(scope="session")
def prebuilt() -> dict[tuple[int, tuple[int, int, int]], tuple[BuildAnswer, int]]:
    """Every (version, shape) built first, in parallel processes; the drawn shapes are checked there too, so that
    dozens of checks run at once: (version, drawn shape) -> (the process's answer, the seed of its inputs)."""
    # A version with one configuration builds its shapes in one process (fewer process starts), and these long
    # processes go first; a version that picks its tile per problem, and each tile of V8's menu below, build each
    # shape in a process of its own. All of it shares one pool, so no build waits for another fixture's.
    per_problem = {v for v in versions() if registry.get(f"v{v}").per_problem}
    specs = [spec(v, list(common.CHECK_SHAPES)) for v in versions() if v not in per_problem]
    specs += [spec(v, [shape]) for v in sorted(per_problem) for shape in common.CHECK_SHAPES]
    specs += menu_specs()
    drawn = [(v, shape, input_seed()) for v in versions() for shape in DRAWN_SHAPES]
    specs += [spec(v, [shape]).put(check=True, seed=seed) for v, shape, seed in drawn]
    answers = jobs.build_all(specs, jobs=os.cpu_count() or 4, timeout_s=900)
    for s, answer in zip(specs, answers, strict=True):
        if not answer.ok and not s.check:  # the test of that version builds it again and reports the error
            print(f"prebuild of {s.cls} at {[list(shape) for shape in s.shapes]} failed: {answer.error}",
                  file=sys.stderr)  # fmt: skip
    checked = answers[len(specs) - len(drawn) :]
    return {(v, shape): (answer, seed) for (v, shape, seed), answer in zip(drawn, checked, strict=True)}


@pytest.fixture(scope="session")
def kernels(prebuilt: dict[Any, Any]) -> dict[int, Any]:
    """One pinned instance per version, loaded here once its builds are in Tilus's cache."""
    return {v: loader.make_kernel(spec(v, []).file, f"MatmulV{v}", None) for v in versions()}


V = [pytest.param(v, id=f"v{v}") for v in versions()]


def shape_params(shapes: tuple[tuple[int, int, int], ...] | list[tuple[int, int, int]]) -> list[Any]:
    return [pytest.param(shape, id="x".join(map(str, shape))) for shape in shapes]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", shape_params(common.CHECK_SHAPES))
@pytest.mark.parametrize("version", V)
def test_version_matches_float64_reference_on_every_element(
    kernels: dict[int, Any], version: int, shape: tuple[int, int, int]
) -> None:
    seed = input_seed()
    result = common.check(kernels[version], *shape, seed=seed)
    assert result.ok, f"V{version} {result.describe()} (HOPPER_MATMUL_SEED={seed})"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", shape_params(DRAWN_SHAPES))
@pytest.mark.parametrize("version", V)
def test_version_matches_float64_reference_at_every_n_mod_8(
    prebuilt: dict[Any, Any], version: int, shape: tuple[int, int, int]
) -> None:
    """The same check as above, run in the process that built the kernel (common.check there)."""
    answer, seed = prebuilt[(version, shape)]
    reports = [check.report for check in answer.checks]
    assert answer.ok, f"V{version}: {reports or answer.error} (HOPPER_MATMUL_SEED={seed})"


def half(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda").half()


def nan_c(m: int, n: int) -> torch.Tensor:
    return torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")


# Each case builds (A, B, C) with C poisoned; every one must be refused before any launch.
BAD_INPUTS: dict[str, Callable[[], tuple[Any, Any, torch.Tensor]]] = {
    "fp32_a": lambda: (torch.randn(256, 128, device="cuda"), half(192, 128), nan_c(256, 192)),
    "a_on_cpu": lambda: (half(256, 128).cpu(), half(192, 128), nan_c(256, 192)),
    "b_not_contiguous": lambda: (half(256, 128), half(128, 192).T, nan_c(256, 192)),
    "k_mismatch": lambda: (half(256, 128), half(192, 136), nan_c(256, 192)),
    "k_not_multiple_of_8": lambda: (half(256, 132), half(192, 132), nan_c(256, 192)),
    "wrong_c_shape": lambda: (half(256, 128), half(192, 128), nan_c(192, 256)),
    "a_off_16_byte_boundary": lambda: (half(256 * 128 + 1)[1:].view(256, 128), half(192, 128), nan_c(256, 192)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(BAD_INPUTS))
@pytest.mark.parametrize("version", V)
def test_version_refuses_bad_input_and_leaves_c_untouched(kernels: dict[int, Any], version: int, case: str) -> None:
    a, b, c = BAD_INPUTS[case]()
    with pytest.raises(ValueError):
        common.matmul(kernels[version], a, b, out=c)
    torch.cuda.synchronize()
    assert torch.isnan(c).all(), "C was written although the input was refused"


# V8 picks its tile per problem, so the shapes above reach only the tiles its model picks there. Each tile of its
# menu is pinned here and checked where edges are ragged: M and N multiples of no tile, a tiny M with N % 8 != 0
# (C copied out by the consumers), the same path over 17 K-tiles, a K shorter than the ring (fewer K-tiles than
# stages), and one large problem. `check sanitize` runs the first three under compute-sanitizer.
MENU_SHAPES = [(1000, 3000, 520), (129, 257, 64), (200, 1001, 1032), (1000, 3000, 128), (5120, 5120, 5120)]


V8_FILE = KERNEL_DIR / "matmul_v8.py"


def menu() -> list[dict[str, Any]]:
    """V8's menu, each tile as a whole configuration (its TUNED with the tile's knobs); [] without V8."""
    if not V8_FILE.exists():
        return []
    tuned = loader.load("matmul_v8").TUNED
    return [{**tuned, **tile.config} for tile in loader.load("tile_model").CANDIDATES]


MENU = {f"{c['block_m']}x{c['block_n']}": c for c in menu()}


def menu_specs() -> list[BuildSpec]:
    """Every tile of V8's menu, pinned, at every (N, K) of MENU_SHAPES: one build per process (the prebuilt pool)."""
    return [BuildSpec.of(file=str(V8_FILE), cls="MatmulV8", config=c, shapes=(s,), check=False)
            for c in MENU.values() for s in MENU_SHAPES]  # fmt: skip


@pytest.fixture(scope="session")
def menu_kernels(prebuilt: dict[Any, Any]) -> dict[str, Any]:
    """Every tile of V8's menu, pinned, loaded once :func:`prebuilt` has built it."""
    return {name: loader.make_kernel(str(V8_FILE), "MatmulV8", c) for name, c in MENU.items()}


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [pytest.param(s, id="x".join(map(str, s))) for s in MENU_SHAPES])
@pytest.mark.parametrize("name", list(MENU))
def test_every_tile_of_v8s_menu_matches_float64_at_ragged_shapes(
    menu_kernels: dict[str, Any], name: str, shape: tuple[int, int, int]
) -> None:
    seed = input_seed()
    result = common.check(menu_kernels[name], *shape, seed=seed)
    assert result.ok, f"V8 {name} {result.describe()} (HOPPER_MATMUL_SEED={seed})"


def test_v8s_menu_is_found_and_names_each_tile_once() -> None:
    """On the CPU: menu() returns [] without V8's file, and the menu test above would then collect no case at all."""
    assert V8_FILE.exists(), f"{V8_FILE} is missing"
    tiles = menu()
    assert tiles, "V8's menu is empty: the GPU test of its tiles collects nothing"
    names = [f"{c['block_m']}x{c['block_n']}" for c in tiles]
    assert names == list(MENU), f"two tiles of V8's menu share a name, and MENU keeps only one: {names}"
