"""Build a Tilus kernel for sm_90a on a machine with no GPU, and report what came out.

Tilus lowers a script to CUDA C++ without a GPU once the target is set to
sm_90a; only its last step (compiling that source) needs CUDA at run time.
We take the generated ``source.cu`` and compile it ourselves with nvcc for
sm_90a, so a CPU test can prove that a kernel builds for the H100/H200 and
holds the instructions its chapter claims.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tilus
import torch

from matmul_bench import kernels

kernels.use_kernel_dir()
import common  # noqa: E402  (the kernels' helper module; importing it applies the Tilus 0.2.0 fixes)

NVCC_FLAGS = ["-std=c++17", "-O3", "-gencode", "arch=compute_90a,code=sm_90a"]


@dataclass(frozen=True)
class BuildReport:
    """What nvcc and ptxas made of one kernel configuration."""

    source: str  # the CUDA C++ that Tilus generated
    ptx: str
    registers: int  # per thread, from ptxas -v
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    ptxas_report: str


class BuildCheckError(RuntimeError):
    """Tilus or nvcc failed to build the kernel for sm_90a."""


def _site_packages() -> list[Path]:
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    return [Path(p) for p in paths]


def find_tool(name: str) -> str:
    """Locate nvcc or ptxas: $NVCC/$PTXAS, the PyPI packages, then PATH."""
    override = os.environ.get(name.upper())
    if override:
        return override
    for site in _site_packages():
        for candidate in sorted(site.glob(f"nvidia/*/bin/{name}")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise BuildCheckError(f"{name} not found: pip install the test extra or put CUDA 13 on PATH")
    return found


def _include_dirs() -> list[str]:
    import tvm_ffi

    return [str(Path(tvm_ffi.__file__).parent / "include"), str(Path(tilus.__file__).parent / "hidet" / "include")]


def generate_source(script_cls: type, config: dict[str, Any], args: tuple[Any, ...]) -> str:
    """Have Tilus lower ``script_cls`` with one configuration for sm_90a; return source.cu."""
    pinned = common.pinned(script_cls, config)
    previous_target = tilus.target._target  # None on a machine with no GPU; restored below
    previous_cache = tilus.option.get_option("cache_dir")
    with tempfile.TemporaryDirectory(prefix="tilus-sm90a-") as cache:
        tilus.option.cache_dir(cache)
        tilus.target.set_current_target(tilus.target.nvgpu_sm90a)
        try:
            pinned()(*args)
        except RuntimeError as error:  # the final compile step needs CUDA; the source is written by then
            sources = sorted(Path(cache).glob("programs/*/module/source.cu"))
            if len(sources) != 1:
                raise BuildCheckError(f"Tilus did not lower {script_cls.__name__} {config}: {error}") from error
            return sources[0].read_text()
        finally:
            tilus.target._target = previous_target
            tilus.option.cache_dir(previous_cache)
    raise BuildCheckError("Tilus compiled for a GPU; run the build check on a machine without CUDA")


def _run(cmd: list[str], what: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildCheckError(f"{what} failed:\n{done.stderr[-4000:]}")
    return done.stderr


def _count(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else 0


def compile_sm90a(source: str) -> BuildReport:
    """Compile generated CUDA C++ to PTX for sm_90a, then assemble that PTX with ptxas -v for its resource report."""
    with tempfile.TemporaryDirectory(prefix="nvcc-sm90a-") as tmp:
        src, ptx = Path(tmp) / "source.cu", Path(tmp) / "kernel.ptx"
        src.write_text(source)
        includes = [f"-I{d}" for d in _include_dirs()]
        _run([find_tool("nvcc"), *NVCC_FLAGS, *includes, "--ptx", str(src), "-o", str(ptx)], "nvcc --ptx")
        # One front-end pass: ptxas assembles the PTX we already have and reports registers and spills.
        report = _run([find_tool("ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(Path(tmp) / "kernel.cubin")],
                      "ptxas")  # fmt: skip
        return BuildReport(
            source=source,
            ptx=ptx.read_text(),
            registers=_count(r"Used (\d+) registers", report),
            spill_stores=_count(r"(\d+) bytes spill stores", report),
            spill_loads=_count(r"(\d+) bytes spill loads", report),
            stack_bytes=_count(r"(\d+) bytes stack frame", report),
            ptxas_report=report,
        )


def cpu_operands(m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Placeholder CPU tensors of the right dtype and shape; Tilus only reads their metadata."""
    a = torch.empty(m, k, dtype=torch.float16)
    b = torch.empty(n, k, dtype=torch.float16)
    c = torch.empty(m, n, dtype=torch.float16)
    return a, b, c


def build_sm90a(script_cls: type, config: dict[str, Any], m: int = 1024, n: int = 1024, k: int = 1024) -> BuildReport:
    """Lower one configuration of a matmul script for sm_90a and compile it with nvcc."""
    a, b, c = cpu_operands(m, n, k)
    return compile_sm90a(generate_source(script_cls, config, (m, n, k, a, b, c)))


# --- the build record behind each chapter's budget box -----------------------------------------------

_LAUNCH = re.compile(r"<<<(dim3\(.*?\)), dim3\((\d+), 1, 1\), (\d+), ")


def launch_facts(source: str) -> dict[str, int | None]:
    """Threads per block, dynamic shared memory per block and (for a fixed grid) the block count of the launch."""
    found = _LAUNCH.search(source)
    if found is None:
        raise BuildCheckError("no kernel launch <<<grid, block, shared memory, stream>>> in the generated source")
    fixed = re.fullmatch(r"dim3\((\d+), 1, 1\)", found.group(1))
    return {
        "threads": int(found.group(2)),
        "shared_bytes": int(found.group(3)),
        "persistent_blocks": int(fixed.group(1)) if fixed else None,
    }


def measured_config(version: str) -> dict[str, Any]:
    """The configuration the chapter measured: its kernel file's ``TUNED``."""
    from matmul_site import versions

    return versions.get(version).tuned


def record_one(version: str) -> dict[str, Any]:
    """Build one version for sm_90a at the ladder's configuration; what its budget box needs."""
    import importlib

    kernel_cls = getattr(importlib.import_module(f"matmul_{version}"), f"MatmulV{version[1:]}")
    config = measured_config(version)
    report = build_sm90a(kernel_cls, config, *common.BENCH_SHAPE)
    from matmul_site import budget, versions

    source_hash = budget.source_hash(versions.get(version).path)
    return {"registers": report.registers, **launch_facts(report.source), "source": source_hash}


def build_all_versions() -> dict[str, dict[str, Any]]:
    """Every version built for sm_90a (in parallel processes): what its budget box needs, by name."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from matmul_site import versions

    names = list(versions.names())
    context = multiprocessing.get_context("spawn")  # fresh interpreters: Tilus keeps global build state
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context) as pool:
        return dict(zip(names, pool.map(record_one, names), strict=True))


def record(path: Path) -> dict[str, Any]:
    """Build every version (in parallel) and write the record atomically; return it."""
    from matmul_site import budget

    built = build_all_versions()
    data = {
        "arch": "sm_90a",
        "shape": list(common.BENCH_SHAPE),
        "tilus": tilus.__version__,
        "nvcc": _nvcc_version(),
        "versions": built,
    }
    budget.write_record(path, data)
    return data


def _nvcc_version() -> str:
    done = subprocess.run([find_tool("nvcc"), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def main(argv: list[str]) -> int:
    """``python -m matmul_bench buildcheck [--record]``: build every version for sm_90a on the CPU."""
    import argparse

    from matmul_site import budget

    parser = argparse.ArgumentParser(
        prog="python -m matmul_bench buildcheck",
        description="Build every version for sm_90a on the CPU (no GPU needed) and print its build facts.",
    )
    parser.add_argument("--record", action="store_true", help=f"also write them to {budget.BUILD_RECORD}")
    args = parser.parse_args(argv)
    built = record(budget.BUILD_RECORD) if args.record else {"versions": build_all_versions()}
    for name, entry in built["versions"].items():
        print(f"{name}: {entry}")
    return 0
