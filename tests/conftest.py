"""Shared test setup: the kernels importable through their one loader, the GPU marker's skip rule, the builds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matmul_bench import kernels
from matmul_data import loader

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = kernels.KERNEL_DIR
loader.importable()  # tests load kernels with kernels.load(); this keeps a bare `import common` working too

# The browser tests need a built site and Chromium: `nox -s browser` runs them.
os.environ.setdefault("TQDM_DISABLE", "1")  # Tilus's build progress bars, also in the background build processes
collect_ignore = [] if os.environ.get("RUN_BROWSER_TESTS") == "1" else ["browser"]


def hopper_missing_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a Hopper GPU is present."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible (GPU tests need an H100/H200)"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"{torch.cuda.get_device_name()} is sm_{major}{minor}, not Hopper sm_90"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The modules that read the background builds run last, each module's tests still together: the tests that need
    # no build run first, beside the builds, instead of alone on one core once the builds are done (2 cores: about
    # a minute of the suite had one core idle).
    import early

    reads_builds = BUILD_TEST_MODULES | early.test_files()
    items.sort(key=lambda item: item.path.name in reads_builds)
    reason = hopper_missing_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the sm_90a kernel builds as soon as a test that inspects them is collected.

    They run in background processes (tests/kernel_builds.py) while the tests before them run here:
    on a 2-core machine the second core would otherwise sit idle.
    """
    if any(item.path.name in BUILD_TEST_MODULES for item in session.items):
        import kernel_builds

        kernel_builds.start()
    import early  # the site builds (tests/early.py), for the same reason

    early.start({item.path.name for item in session.items})


BUILD_TEST_MODULES = {
    "test_buildcheck.py",
    "test_tilus_fixes.py",
    "test_kernels_build.py",
    "test_v4_v6_build.py",
    "test_v7_variants_build.py",
    "test_tryit_build.py",
    "test_v7_build.py",
    "test_epilogue_build.py",
    "test_v9_build.py",
    "test_v9_cluster.py",
}
