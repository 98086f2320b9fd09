"""Kernels built for sm_90a on a machine with no GPU (Tilus lowers, nvcc and ptxas compile), and what came out."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matmul_bench import kernels, plan
from matmul_data import budget, paths, versions
from matmul_data.decoding import Config
from matmul_data.files import write_atomic

if TYPE_CHECKING:  # tilus and torch are imported where a build needs them: --help runs without them
    import torch


@cache
def common() -> Any:
    """The kernels' helpers; importing them applies the Tilus 0.2.0 fixes (and imports tilus and torch)."""
    return kernels.load("common")


NVCC_FLAGS = ["-std=c++17", "-O3", "-gencode", "arch=compute_90a,code=sm_90a"]
BUILD_TOOLS = ("nvcc", "ptxas", "cuobjdump", "nvdisasm")  # every build the command makes runs each of them
# What ptxas -v reports of a build (0 where it says nothing), by the field of BuildReport that keeps it.
PTXAS_COUNTS = {
    "registers": r"Used (\d+) registers",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
    "stack_bytes": r"(\d+) bytes stack frame",
    "barriers": r"used (\d+) barriers",
}


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


class BuildCheckError(RuntimeError):
    """Tilus or nvcc failed to build the kernel for sm_90a."""


def find_tool(name: str) -> str:
    """Locate nvcc or ptxas: $NVCC/$PTXAS, the PyPI packages, then PATH; BuildCheckError when it is not there."""
    variable = name.upper()
    override = os.environ.get(variable)
    if override:  # checked here: else a wrong one fails later, as subprocess's FileNotFoundError, after the lowering
        found = shutil.which(override)  # a path or a name on PATH, either an executable
        if found is None:
            raise BuildCheckError(f"{name} not found: ${variable} is {override}, not an executable; fix or unset it")
        return found
    sites = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])}
    wheels = [str(c) for site in sites for c in sorted(site.glob(f"nvidia/*/bin/{name}")) if os.access(c, os.X_OK)]
    found = wheels[0] if wheels else shutil.which(name)
    if found is None:
        raise BuildCheckError(f"{name} not found: pip install the test extra or put CUDA 13 on PATH")
    return found


def generate_source(script_cls: type, config: Config, args: tuple[Any, ...]) -> str:
    """Have Tilus lower ``script_cls`` with one configuration for sm_90a; return source.cu."""
    import tilus

    pinned = common().pinned(script_cls, config)
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


def run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A tool's finished process; BuildCheckError with the tail of its stderr when it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise BuildCheckError(f"{what} failed:\n{done.stderr[-4000:]}")
    return done


def advisories(report: str) -> dict[str, int]:
    """ptxas's numbered messages, with or without -v, by code: "(C7517) warpgroup.wait is injected ..." is C7517."""
    return dict(sorted(Counter(re.findall(r"^ptxas \w+\s*: \((C\d+)\)", report, re.M)).items()))


def ptxas_text(report: str) -> str:
    """ptxas's output without its "Compile time" line (the one line that changes from one run to the next)."""
    return "\n".join(line for line in report.splitlines() if "Compile time =" not in line).strip() + "\n"


def disassemble(cubin: Path) -> str:
    """``cuobjdump -sass`` of a cubin (it runs nvdisasm, which the nvidia-cuda-nvdisasm wheel ships)."""
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(nvdisasm).parent), os.environ.get("PATH", "")])}
    return run([cuobjdump, "-sass", str(cubin)], "cuobjdump -sass", env).stdout


def compile_sm90a(source: str, sass: bool = False) -> BuildReport:
    """Generated CUDA C++ compiled to PTX for sm_90a, assembled by ptxas -v (resources), disassembled with ``sass``."""
    import tilus
    import tvm_ffi

    with tempfile.TemporaryDirectory(prefix="nvcc-sm90a-") as tmp:
        src, ptx = Path(tmp) / "source.cu", Path(tmp) / "kernel.ptx"
        src.write_text(source)
        headers = (Path(tvm_ffi.__file__).parent / "include", Path(tilus.__file__).parent / "hidet" / "include")
        includes = [f"-I{d}" for d in headers]  # the headers Tilus's generated source includes
        run([find_tool("nvcc"), *NVCC_FLAGS, *includes, "--ptx", str(src), "-o", str(ptx)], "nvcc --ptx")
        # One front-end pass: ptxas assembles the PTX we already have and reports registers and spills.
        cubin = Path(tmp) / "kernel.cubin"
        report = run([find_tool("ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(cubin)], "ptxas").stderr
        counts = {key: int(m[1]) if (m := re.search(pattern, report)) else 0 for key, pattern in PTXAS_COUNTS.items()}
        return BuildReport(
            source, ptx.read_text(), ptxas_report=report, sass=disassemble(cubin) if sass else "", **counts
        )


def cpu_operands(m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Placeholder CPU tensors of the right dtype and shape; Tilus only reads their metadata."""
    import torch

    a, b, c = (torch.empty(*shape, dtype=torch.float16) for shape in ((m, k), (n, k), (m, n)))
    return a, b, c


def build_sm90a(
    script_cls: type, config: Config, m: int = 1024, n: int = 1024, k: int = 1024, sass: bool = False
) -> BuildReport:
    """Lower one configuration of a matmul script for sm_90a and compile it with nvcc (``sass``: and disassemble)."""
    return compile_sm90a(generate_source(script_cls, config, (m, n, k, *cpu_operands(m, n, k))), sass=sass)


# "/*0a40*/  @!P0 HGMMA.64x256x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;": address, predicate, opcode, operands.
SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)([^;]*);", re.M)


def sass_instructions(sass: str) -> list[tuple[str, str]]:
    """Every instruction of a disassembly as (opcode with its modifiers, operands)."""
    return [(op, operands.strip()) for op, operands in SASS_LINE.findall(sass)]


def sass_facts(sass: str) -> dict[str, dict[str, int]]:
    """Static counts: each family of budget.SASS_FAMILIES; HGMMA by shape; WARPGROUP.DEPBAR by groups left pending."""
    families = dict.fromkeys(budget.SASS_FAMILIES, 0)
    hgmma, depbar = Counter[str](), Counter[str]()
    for op, operands in sass_instructions(sass):
        parts = op.split(".")
        family = ".".join(parts[:2]) if parts[0] == "WARPGROUP" else parts[0]
        if family in families:
            families[family] += 1
        if family == "HGMMA":
            hgmma[".".join(parts[1:])] += 1  # by shape
        if family == "WARPGROUP.DEPBAR":
            depbar[str(int(operands.rsplit(",", 1)[-1].strip(), 16))] += 1  # by the groups it leaves pending
    return {"sass": families, "hgmma": dict(sorted(hgmma.items())), "depbar": dict(sorted(depbar.items()))}


def early_accumulator_reads(sass: str) -> list[str]:
    """F2FP conversions or stores after an HGMMA and before the next ``WARPGROUP.DEPBAR.LE gsb0, 0x0``: reads of WGMMA
    results before the wait that retires them (ptxas 13.0 scheduled V6-V8's register epilogue so at N % 8 != 0)."""
    early, pending = [], False
    for op, operands in sass_instructions(sass):
        if op.startswith("HGMMA"):
            pending = True
        elif op.startswith("WARPGROUP.DEPBAR") and operands.replace(" ", "").endswith(",0x0"):
            pending = False
        elif pending and op.split(".")[0] in ("F2FP", "STS", "STSM", "STG", "STL"):
            early.append(f"{op} {operands}")
    return early


# <<<grid, block, shared memory, stream>>>: the grid's block count where it is fixed, threads, shared bytes.
LAUNCH = re.compile(r"<<<dim3\((?:(\d+), 1, 1|.*?)\), dim3\((\d+), 1, 1\), (\d+), ")


def launch_facts(source: str) -> dict[str, int | None]:
    """Threads per block, dynamic shared memory per block and (for a fixed grid) the block count of the launch."""
    found = LAUNCH.search(source)
    if found is None:
        raise BuildCheckError("no kernel launch <<<grid, block, shared memory, stream>>> in the generated source")
    grid, threads, shared = found.groups()
    return {"threads": int(threads), "shared_bytes": int(shared), "persistent_blocks": int(grid) if grid else None}


# The PTX instructions a chapter may quote, by the prefix of their opcode: the first of each in a build is kept.
PTX_OPCODES = (
    "cp.async.bulk.tensor", "mbarrier.arrive.expect_tx", "mbarrier.try_wait", "mbarrier.arrive", "mma.sync",
    "ldmatrix", "wgmma.fence", "wgmma.mma_async", "wgmma.commit_group", "wgmma.wait_group", "elect.sync",
    "fence.proxy.async", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "stmatrix", "setmaxnreg",
    "bar.sync", "bar.cta.sync", "st.global", "barrier.cluster.arrive",
)  # fmt: skip
# Variants of one opcode kept apart: (text in the opcode, suffix of the key).
PTX_KINDS = ((".global.shared", " (store)"), (".multicast::cluster", " (multicast)"), (".shared::cluster", " (remote)"))


def ptx_lines(ptx: str) -> dict[str, str]:
    """The first of each of PTX_OPCODES in a build's PTX (a TMA store, a multicast load and a remote arrive apart, by
    PTX_KINDS), long register lists cut."""
    found: dict[str, str] = {}
    for line in ptx.splitlines():
        code = line.split("//")[0].strip()
        code = code[1:-1] if code.startswith("{") and code.endswith("}") else code  # an inline asm block
        for statement in code.split(";"):
            text = re.sub(r"^(?:\w+:\s*)?(?:@!?\S+\s+)?", "", statement.strip())  # a label, a predicate
            opcode = text.split(" ")[0].split("\t")[0]
            matches = [p for p in PTX_OPCODES if opcode == p or opcode.startswith(p + ".")]
            if not matches:
                continue
            key = max(matches, key=len) + next((suffix for part, suffix in PTX_KINDS if part in opcode), "")
            if key not in found:
                found[key] = " ".join(re.sub(r"\{(%\w+)(?:, %\w+){3,}, (%\w+)\}", r"{\1, ..., \2}", text).split()) + ";"
    return dict(sorted(found.items()))


def build_facts(report: BuildReport) -> dict[str, Any]:
    """What the record keeps of one build: resources (ptxas), launch, advisories, SASS counts, ptxas's output."""
    return {
        **{key: getattr(report, key) for key in PTXAS_COUNTS},
        **launch_facts(report.source),
        "advisories": advisories(report.ptxas_report),
        **sass_facts(report.sass),
        "ptxas": ptxas_text(report.ptxas_report),
        "ptx": ptx_lines(report.ptx),
    }


# Builds beside the versions that a chapter quotes: name -> (kind, what it is). "edit": a try-it edit of
# specs/tryit.py (version-name) applied to the chapter's kernel; "steps": a variant of specs/steps.py;
# "tile": V8 pinned to another tile of its model's menu (version-<block_m>x<block_n>); "tryit": a timed try-it variant
# of specs/tryit.py (try-<name>), a version's own class pinned to another configuration.
EXTRA_BUILDS: dict[str, tuple[str, str]] = {
    "v1-64x128": ("tryit", "V1 pinned to the 64 x 128 tile (its Try it)"),
    "v1-wait-group-1": ("edit", "V1 with wait_group(1) instead of wait_group(0) (its Try it)"),
    "v5-no-final-wait": ("edit", "V5 without the wait_group(0) before the epilogue (its Try it)"),
    "v6-no-sync-after-store": ("edit", "V6 without the sync before the TMA store is issued (its Try it)"),
    "v6c-chunks-sw8": ("steps", "V6 in clusters of two, B multicast, remote arrives released at cluster scope"),
    "v6c-chunks-sw8-cta": ("steps", "the same clusters, remote arrives released at CTA scope"),
    "v7-streamk": ("steps", "V7 with stream-K for the last wave (experiments/v7_streamk.py)"),
    "v8-256x128": ("tile", "V8 with the 256 x 128 tile: two consumer groups of 128 x 128"),
    "v8-128x192": ("tile", "V8 with the 128 x 192 tile: four stages"),
    "v8-128x128": ("tile", "V8 with the 128 x 128 tile: six stages"),
    "v8-192x192": ("tile", "V8 with the 192 x 192 tile: three consumer groups, setmaxnreg"),
    "v8-no-setmaxnreg": ("edit", "V8's 192 x 192 tile without setmaxnreg (its Try it)"),
    "v9-share-b": ("share", "V9's 128 x 256 tile in clusters of two sharing B (what it runs at K % 16 != 0)"),
}


def record_build(name: str) -> dict[str, Any]:
    """The build facts of a version (its TUNED) or of one of EXTRA_BUILDS (with what it is and its files)."""
    kind, what = EXTRA_BUILDS.get(name, ("version", ""))
    of, _, rest = name.partition("-")
    of = re.match(r"v\d+", of)[0]  # a steps variant of V6 in clusters, v6c-..., is built beside V6
    version = versions.get(of)
    kernel = version.path
    with tempfile.TemporaryDirectory(prefix="buildcheck-") as tmp:
        if kind == "version":
            cls, config, files = kernels.kernel_class(kernel, version.class_name), version.tuned, [kernel]
        elif kind == "edit":
            from matmul_bench import tryit

            entry = tryit.load_spec(tryit.SPEC_FILE)["EDITS"][of][rest]
            edited = Path(tmp) / kernel.name
            edited.write_text(tryit.apply_edits(kernel.read_text(encoding="utf-8"), entry["edits"], str(kernel)))
            cls = getattr(kernels.load_file(edited, f"{kernel.stem}_edited"), version.class_name)
            config, files = {**version.tuned, **entry["config"]}, [kernel, tryit.SPEC_FILE]
        elif kind == "tryit":
            from matmul_bench import tryit

            _, _, pinned, _ = kernels.import_spec(tryit.SPEC_FILE, "try-it").VARIANTS[f"try-{name}"]
            cls = kernels.kernel_class(kernel, version.class_name)
            config, files = {**version.tuned, **pinned}, [kernel, tryit.SPEC_FILE]
        elif kind == "tile":
            module = kernels.load(kernel.stem)
            block_m, block_n = (int(x) for x in rest.split("x"))
            tile = next(t for t in module.tile_model.CANDIDATES if (t.block_m, t.block_n) == (block_m, block_n))
            cls, config = getattr(module, version.class_name), {**version.tuned, **tile.config}
            files = [kernel, kernel.parent / "tile_model.py"]
        elif kind == "share":
            share = rest.removeprefix("share-")
            cls, config = kernels.kernel_class(kernel, version.class_name), {**version.tuned, "share": share}
            config["swizzle_size"] = kernels.load(kernel.stem).SWIZZLE[share]
            files = [kernel, kernel.parent / "pipeline.py", kernel.parent / "tile_model.py"]
        else:  # the variant's configuration is recorded below; steps.py's other entries do not change the build
            steps = kernels.import_spec(plan.STEPS_FILE, "steps")
            file, cls_name, config, _ = steps.VARIANTS[name]
            cls = kernels.kernel_class(kernels.EXPERIMENTS_DIR / file, cls_name)
            files = [kernel, kernels.EXPERIMENTS_DIR / file]
            files += [kernels.EXPERIMENTS_DIR / "streamk.py"] if file == "v7_streamk.py" else []
        report = build_sm90a(cls, config, *common().BENCH_SHAPE, sass=True)
    relative = [f.relative_to(paths.ROOT).as_posix() for f in files]
    facts = {**build_facts(report), "source": budget.files_hash(relative)}
    return facts if kind == "version" else {**facts, "of": of, "what": what, "config": config, "files": relative}


def build_all() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every version and every extra build for sm_90a (in parallel processes): their build facts, by name."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # fresh interpreters: Tilus keeps global build state
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context) as pool:
        built = {name: pool.submit(record_build, name) for name in versions.names()}
        extras = {name: pool.submit(record_build, name) for name in EXTRA_BUILDS}
    return {n: f.result() for n, f in built.items()}, {n: f.result() for n, f in extras.items()}


def tool_version(name: str) -> str:
    """The last line of ``<tool> --version``."""
    return run([find_tool(name), "--version"], f"{name} --version").stdout.strip().splitlines()[-1]


def main(argv: list[str]) -> int:
    """Build every version and extra for sm_90a and print their facts; ``--record`` writes the build record."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m matmul_bench buildcheck", description=main.__doc__)
    parser.add_argument("--record", action="store_true", help=f"also write them to {budget.BUILD_RECORD}")
    parser.add_argument("--source", metavar="vN", help="print the CUDA source Tilus generates for one version "
                        "(its TUNED configuration, at 1024^3) and build nothing else")  # fmt: skip
    args = parser.parse_args(argv)
    try:  # a tool missing or failing, or Tilus not lowering: its message (a tool's own output under it), no traceback
        if args.source:
            if args.source not in versions.names():
                parser.error(f"--source {args.source}: not a version (known: {', '.join(versions.names())})")
            version = versions.get(args.source)
            cls = kernels.kernel_class(version.path, version.class_name)
            print(generate_source(cls, version.tuned, (1024, 1024, 1024, *cpu_operands(1024, 1024, 1024))))
            return 0
        for tool in BUILD_TOOLS:  # before any build: else each process lowers its kernel first, then finds none
            find_tool(tool)
        built, extras = build_all()
        if args.record:
            import tilus

            record = {"arch": "sm_90a", "shape": list(common().BENCH_SHAPE), "tilus": tilus.__version__,
                      "nvcc": tool_version("nvcc"), "cuobjdump": tool_version("cuobjdump"), "versions": built,
                      "extras": extras}  # fmt: skip
            payload = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
            write_atomic(budget.BUILD_RECORD, payload)
    except BuildCheckError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    for name, entry in [*built.items(), *extras.items()]:
        print(f"{name}: { ({k: v for k, v in entry.items() if k not in ('ptxas', 'source', 'files')}) }")
    return 0
