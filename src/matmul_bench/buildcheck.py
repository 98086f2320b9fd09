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
import sys
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
    barriers: int = 0  # named barriers (bar.sync ids) the kernel uses, from ptxas -v
    sass: str = ""  # cuobjdump -sass of the cubin, when asked for (compile_sm90a(..., sass=True))

    @property
    def advisories(self) -> dict[str, int]:
        """ptxas's numbered messages ("(C7517) warpgroup.wait is injected ...") by code: how many of each."""
        return advisories(self.ptxas_report)


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


def advisories(report: str) -> dict[str, int]:
    """ptxas's numbered messages by code, e.g. {"C7517": 1, "C7518": 1}; ptxas prints them with or without -v."""
    counts: dict[str, int] = {}
    for code in re.findall(r"^ptxas \w+\s*: \((C\d+)\)", report, re.M):
        counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items()))


def ptxas_text(report: str) -> str:
    """ptxas's output without its "Compile time" line (the one line that changes from one run to the next)."""
    return "\n".join(line for line in report.splitlines() if "Compile time =" not in line).strip() + "\n"


def disassemble(cubin: Path) -> str:
    """``cuobjdump -sass`` of a cubin (it runs nvdisasm, which the nvidia-cuda-nvdisasm wheel ships)."""
    cuobjdump = find_tool("cuobjdump")
    nvdisasm_dir = str(Path(find_tool("nvdisasm")).parent)
    env = {**os.environ, "PATH": os.pathsep.join([nvdisasm_dir, os.environ.get("PATH", "")])}
    done = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise BuildCheckError(f"cuobjdump -sass failed:\n{done.stderr[-4000:]}")
    return done.stdout


def compile_sm90a(source: str, sass: bool = False) -> BuildReport:
    """Compile generated CUDA C++ to PTX for sm_90a, then assemble that PTX with ptxas -v for its resource report;
    with ``sass``, also disassemble the cubin."""
    with tempfile.TemporaryDirectory(prefix="nvcc-sm90a-") as tmp:
        src, ptx = Path(tmp) / "source.cu", Path(tmp) / "kernel.ptx"
        src.write_text(source)
        includes = [f"-I{d}" for d in _include_dirs()]
        _run([find_tool("nvcc"), *NVCC_FLAGS, *includes, "--ptx", str(src), "-o", str(ptx)], "nvcc --ptx")
        # One front-end pass: ptxas assembles the PTX we already have and reports registers and spills.
        cubin = Path(tmp) / "kernel.cubin"
        report = _run([find_tool("ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(cubin)], "ptxas")
        return BuildReport(
            source=source,
            ptx=ptx.read_text(),
            registers=_count(r"Used (\d+) registers", report),
            spill_stores=_count(r"(\d+) bytes spill stores", report),
            spill_loads=_count(r"(\d+) bytes spill loads", report),
            stack_bytes=_count(r"(\d+) bytes stack frame", report),
            ptxas_report=report,
            barriers=_count(r"used (\d+) barriers", report),
            sass=disassemble(cubin) if sass else "",
        )


def cpu_operands(m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Placeholder CPU tensors of the right dtype and shape; Tilus only reads their metadata."""
    a = torch.empty(m, k, dtype=torch.float16)
    b = torch.empty(n, k, dtype=torch.float16)
    c = torch.empty(m, n, dtype=torch.float16)
    return a, b, c


def build_sm90a(
    script_cls: type, config: dict[str, Any], m: int = 1024, n: int = 1024, k: int = 1024, sass: bool = False
) -> BuildReport:
    """Lower one configuration of a matmul script for sm_90a and compile it with nvcc (``sass``: and disassemble)."""
    a, b, c = cpu_operands(m, n, k)
    return compile_sm90a(generate_source(script_cls, config, (m, n, k, a, b, c)), sass=sass)


# --- SASS: the instructions the chapters talk about, counted in the code (static counts, not executions) ----

# "/*0a40*/  @!P0 HGMMA.64x256x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;": address, predicate, opcode, operands.
_SASS_LINE = re.compile(
    r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)([^;]*);", re.M
)


def sass_instructions(sass: str) -> list[tuple[str, str]]:
    """Every instruction of a disassembly as (opcode with its modifiers, operands)."""
    return [(op, operands.strip()) for op, operands in _SASS_LINE.findall(sass)]


def sass_facts(sass: str) -> dict[str, dict[str, int]]:
    """Static counts: each family of budget.SASS_FAMILIES; HGMMA by shape; WARPGROUP.DEPBAR by groups left pending."""
    from matmul_data import budget

    families = dict.fromkeys(budget.SASS_FAMILIES, 0)
    hgmma: dict[str, int] = {}
    depbar: dict[str, int] = {}
    for op, operands in sass_instructions(sass):
        parts = op.split(".")
        family = ".".join(parts[:2]) if parts[0] == "WARPGROUP" else parts[0]
        if family in families:
            families[family] += 1
        if family == "HGMMA":
            shape = ".".join(parts[1:])
            hgmma[shape] = hgmma.get(shape, 0) + 1
        if family == "WARPGROUP.DEPBAR":
            pending = str(int(operands.rsplit(",", 1)[-1].strip(), 16))
            depbar[pending] = depbar.get(pending, 0) + 1
    return {"sass": families, "hgmma": dict(sorted(hgmma.items())), "depbar": dict(sorted(depbar.items()))}


def early_accumulator_reads(sass: str) -> list[str]:
    """Instructions that read WGMMA results before the wait that retires them: an F2FP (fp32 -> fp16 conversion of
    the accumulator) or a store (a spill included) after an HGMMA and before the next ``WARPGROUP.DEPBAR.LE gsb0, 0x0``.

    PTX forbids touching an accumulator before ``wgmma.wait_group`` retires its MMAs, and Tilus emits the wait
    first; ptxas 13.0 still scheduled the conversions of V6 to V8's register epilogue above the final wait (N % 8
    != 0, the build that spilled), so C missed part of the last K-tile. Only the disassembly shows it.
    """
    early, pending = [], False
    for op, operands in sass_instructions(sass):
        if op.startswith("HGMMA"):
            pending = True
        elif op.startswith("WARPGROUP.DEPBAR") and operands.replace(" ", "").endswith(",0x0"):
            pending = False
        elif pending and op.split(".")[0] in ("F2FP", "STS", "STSM", "STG", "STL"):
            early.append(f"{op} {operands}")
    return early


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
    from matmul_data import versions

    return versions.get(version).tuned


def build_facts(report: BuildReport) -> dict[str, Any]:
    """What the record keeps of one build: resources (ptxas), launch, advisories, SASS counts, ptxas's output."""
    return {
        "registers": report.registers,
        "spill_stores": report.spill_stores,
        "spill_loads": report.spill_loads,
        "stack_bytes": report.stack_bytes,
        "barriers": report.barriers,
        **launch_facts(report.source),
        "advisories": report.advisories,
        **sass_facts(report.sass),
        "ptxas": ptxas_text(report.ptxas_report),
    }


def record_one(version: str) -> dict[str, Any]:
    """Build one version for sm_90a at the ladder's configuration; its build facts."""
    import importlib

    kernel_cls = getattr(importlib.import_module(f"matmul_{version}"), f"MatmulV{version[1:]}")
    config = measured_config(version)
    report = build_sm90a(kernel_cls, config, *common.BENCH_SHAPE, sass=True)
    from matmul_data import budget, versions

    return {**build_facts(report), "source": budget.source_hash(versions.get(version).path)}


# Builds beside the versions that a chapter quotes: name -> (kind, what it is). "edit": a try-it edit of
# experiments/tryit.py (version-name) applied to the chapter's kernel; "steps": a variant of experiments/steps.py;
# "tile": V8 pinned to another tile of its model's menu (version-<block_m>x<block_n>).
EXTRA_BUILDS: dict[str, tuple[str, str]] = {
    "v5-no-final-wait": ("edit", "V5 without the wait_group(0) before the epilogue (its Try it)"),
    "v7-streamk": ("steps", "V7 with stream-K for the last wave (experiments/v7_streamk.py)"),
    "v8-256x128": ("tile", "V8 with the 256 x 128 tile: two consumer groups of 128 x 128"),
    "v8-128x192": ("tile", "V8 with the 128 x 192 tile: four stages"),
    "v8-128x128": ("tile", "V8 with the 128 x 128 tile: six stages"),
    "v8-192x192": ("tile", "V8 with the 192 x 192 tile: three consumer groups, setmaxnreg"),
    "v8-no-setmaxnreg": ("edit", "V8's 192 x 192 tile without setmaxnreg (its Try it)"),
}


def _module_from(path: Path, name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildCheckError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_extra(name: str) -> dict[str, Any]:
    """Build one of EXTRA_BUILDS at the ladder's shape; its build facts and the files it was built from."""
    import importlib

    from matmul_data import budget, paths, versions

    kind, what = EXTRA_BUILDS[name]
    experiments = paths.ROOT / "experiments"
    with tempfile.TemporaryDirectory(prefix="buildcheck-") as tmp:
        if kind == "edit":
            from matmul_bench import tryit

            version, _, edit_name = name.partition("-")
            entry = tryit.load_spec(tryit.SPEC_FILE)["EDITS"][version][edit_name]
            kernel = versions.get(version).path
            edited = Path(tmp) / kernel.name
            edited.write_text(tryit.apply_edits(kernel.read_text(encoding="utf-8"), entry["edits"], str(kernel)))
            cls = getattr(_module_from(edited, f"{kernel.stem}_edited"), f"MatmulV{version[1:]}")
            config = {**versions.get(version).tuned, **entry["config"]}
            files = [kernel, tryit.SPEC_FILE]
        elif kind == "tile":
            version, _, tile = name.partition("-")
            block_m, block_n = (int(x) for x in tile.split("x"))
            module = importlib.import_module(f"matmul_{version}")
            chosen = next(t for t in module.tile_model.CANDIDATES if (t.block_m, t.block_n) == (block_m, block_n))
            cls = getattr(module, f"MatmulV{version[1:]}")
            config = {**versions.get(version).tuned, **chosen.config}
            files = [versions.get(version).path, versions.get(version).path.parent / "tile_model.py"]
        else:
            if str(experiments) not in sys.path:  # the experiments import their helpers (streamk.py) by name
                sys.path.insert(0, str(experiments))
            file, cls_name, config, _ = _module_from(experiments / "steps.py", "_steps_spec").VARIANTS[name]
            experiment = experiments / file
            cls = getattr(_module_from(experiment, experiment.stem), cls_name)
            version = name.partition("-")[0]
            # The variant's configuration is recorded below; steps.py's other entries do not change the build.
            files = [versions.get(version).path, experiment, *sorted(experiments.glob("streamk.py"))]
        report = build_sm90a(cls, config, *common.BENCH_SHAPE, sass=True)
    relative = [f.relative_to(paths.ROOT).as_posix() for f in files]
    return {**build_facts(report), "of": version, "what": what, "config": config, "files": relative,
            "source": budget.files_hash(relative)}  # fmt: skip


def _build(item: tuple[str, str]) -> dict[str, Any]:
    kind, name = item
    return record_one(name) if kind == "version" else record_extra(name)


def build_all() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every version and every extra build for sm_90a (in parallel processes): their build facts, by name."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from matmul_data import versions

    items = [("version", n) for n in versions.names()] + [("extra", n) for n in EXTRA_BUILDS]
    context = multiprocessing.get_context("spawn")  # fresh interpreters: Tilus keeps global build state
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context) as pool:
        built = dict(zip(items, pool.map(_build, items), strict=True))
    return ({n: v for (k, n), v in built.items() if k == "version"},
            {n: v for (k, n), v in built.items() if k == "extra"})  # fmt: skip


def record(path: Path) -> dict[str, Any]:
    """Build every version (in parallel) and write the record atomically; return it."""
    from matmul_data import budget

    built, extras = build_all()
    data = {
        "arch": "sm_90a",
        "shape": list(common.BENCH_SHAPE),
        "tilus": tilus.__version__,
        "nvcc": _tool_version("nvcc"),
        "cuobjdump": _tool_version("cuobjdump"),
        "versions": built,
        "extras": extras,
    }
    budget.write_record(path, data)
    return data


def _tool_version(name: str) -> str:
    done = subprocess.run([find_tool(name), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def main(argv: list[str]) -> int:
    """``python -m matmul_bench buildcheck [--record]``: build every version for sm_90a on the CPU."""
    import argparse

    from matmul_data import budget

    parser = argparse.ArgumentParser(
        prog="python -m matmul_bench buildcheck",
        description="Build every version for sm_90a on the CPU (no GPU needed) and print its build facts.",
    )
    parser.add_argument("--record", action="store_true", help=f"also write them to {budget.BUILD_RECORD}")
    args = parser.parse_args(argv)
    if args.record:
        built = record(budget.BUILD_RECORD)
    else:
        versions_built, extras = build_all()
        built = {"versions": versions_built, "extras": extras}
    for name, entry in [*built["versions"].items(), *built["extras"].items()]:
        shown = {k: v for k, v in entry.items() if k not in ("ptxas", "source", "files")}
        print(f"{name}: {shown}")
    return 0
