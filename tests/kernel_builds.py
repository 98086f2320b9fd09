"""Each kernel version built once per pytest session for sm_90a on the CPU, for every test that inspects builds.

A version is built with one configuration: the first choice of every autotune knob (for V4 and later,
the 128 x 256 tile the chapters quote), at a shape with ragged M and N edges and a partial last K-tile.
"""

from __future__ import annotations

import functools
import itertools
import json
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from matmul_bench import buildcheck, kernels
from matmul_data import versions

TESTS = os.path.dirname(os.path.abspath(__file__))

# M = 1000 and N = 1800 are multiples of no tile size; K = 520 = 8 * 64 + 8 leaves a partial last K-tile.
BUILD_SHAPE = (1000, 1800, 520)


def kernel_class(version: str) -> type:
    """The Tilus script class of a version ("v3" -> matmul_v3.MatmulV3)."""
    return getattr(kernels.load(f"matmul_{version}"), f"MatmulV{version[1:]}")


def autotune_space(cls: type) -> list[dict[str, Any]]:
    """Every configuration the autotuner would try, in its order (first choice of every knob first)."""
    groups = []
    for names, choices in getattr(cls, "_autotune_space", {}).items():
        keys = [name.strip() for name in names.split(",")]
        groups.append([dict(zip(keys, choice if len(keys) > 1 else [choice], strict=True)) for choice in choices])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*groups)]


def build_config(version: str) -> dict[str, Any]:
    return autotune_space(kernel_class(version))[0]


def _build(version: str) -> buildcheck.BuildReport:
    return buildcheck.build_sm90a(kernel_class(version), build_config(version), *BUILD_SHAPE, sass=True)


@functools.cache
def _pool() -> ProcessPoolExecutor:
    """One process per core: nvcc and Tilus lowering are single-threaded."""
    # spawn, not fork: the workers import Tilus and torch afresh instead of inheriting this process's threads.
    return ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn"))


@functools.cache
def _pending() -> dict[str, Future[buildcheck.BuildReport]]:
    """Start every version's build at once."""
    return {v.name: _pool().submit(_build, v.name) for v in versions.all_versions()}


def _build_experiment(
    path: str, cls: str, config: dict[str, Any], shape: tuple[int, int, int], sass: bool = False
) -> buildcheck.BuildReport:
    return buildcheck.build_sm90a(kernels.kernel_class(path, cls), config, *shape, sass=sass)


@functools.cache
def _experiments() -> dict[str, Future[buildcheck.BuildReport]]:
    """The experiments' builds that tests inspect (EXPERIMENT_BUILDS), started like the versions'."""
    return {name: _pool().submit(_build_experiment, *args) for name, args in EXPERIMENT_BUILDS.items()}


# Lowering the minimal kernel in a fresh process, with or without the Tilus fixes (tests/test_tilus_fixes.py): the
# fixes patch Tilus for the whole process, and every process of the pool has them (buildcheck imports common).
LOWER_MINIMAL = """
import json
from matmul_bench import buildcheck
from minimal_kernel import MinimalTmaWgmma
a, b, c = buildcheck.cpu_operands(1024, 1024, 1024)
print(json.dumps(buildcheck.generate_source(MinimalTmaWgmma, {}, (1024, 1024, 1024, a, b, c))))
"""


def _lower_minimal_without_fixes() -> str:
    env = dict(kernels.child_env(), HOPPER_MATMUL_NO_TILUS_FIXES="1")
    env["PYTHONPATH"] += os.pathsep + TESTS  # the minimal kernel
    done = subprocess.run([sys.executable, "-c", LOWER_MINIMAL], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"lowering the minimal kernel without the fixes failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.cache
def _unfixed() -> Future[str]:
    return _pool().submit(_lower_minimal_without_fixes)


def start() -> None:
    """Begin every build now, in the background; :func:`built` and :func:`built_experiment` collect them.

    The minimal kernel's two lowerings first: test_buildcheck.py and test_tilus_fixes.py need nothing else.
    """
    _unfixed()
    _experiments()  # the minimal kernel's build first: EXPERIMENT_BUILDS lists it first
    _pending()


def minimal_source_without_fixes() -> str:
    """The CUDA source Tilus generates for the minimal kernel (defaults, 1024^3) with none of the fixes applied."""
    return _unfixed().result()


def built_experiment(name: str) -> buildcheck.BuildReport:
    """An experiment's sm_90a build (EXPERIMENT_BUILDS), made once per session in the background."""
    return _experiments()[name].result()


# Experiments whose builds a test module inspects: name -> (file, class, config, shape[, disassemble]). The test
# module fills this when it is imported (at collection), so conftest's start() builds them with the versions.
EXPERIMENT_BUILDS: dict[str, tuple[Any, ...]] = {}
# The smallest TMA + WGMMA kernel with its default tile, fixes applied (tests/test_buildcheck.py, test_tilus_fixes.py).
MINIMAL = "minimal"
EXPERIMENT_BUILDS[MINIMAL] = (os.path.join(TESTS, "minimal_kernel.py"), "MinimalTmaWgmma", {}, (1024, 1024, 1024), True)


def built(version: str) -> buildcheck.BuildReport:
    """The sm_90a build of a version, made once per session (all versions in parallel) and shared by every module."""
    return _pending()[version].result()
