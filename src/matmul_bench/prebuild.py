"""Build Tilus kernels ahead of time, many at once, each in its own process; optionally check them.

Tilus compiles a kernel once per (N, K) and configuration (about 10 s of nvcc each) and caches the
result on disk, so processes started later load it at once. ``build_all`` runs one process per
kernel spec in parallel: the benchmark builds every implementation of its plan this way, and the
GPU test suite builds every version for every shape it checks.

    python -m matmul_bench prebuild '<spec as JSON>'    # one spec in this process; prints one JSON line

A spec: {"file": path, "cls": class name, "config": {...} or null (autotune), "shapes": [[m, n, k], ...],
"check": bool, "seed": int (optional: the inputs of the checks)}.
The answer: {"ok": bool, "configs": {"MxNxK": config}, "checks": [...], "error": str or null}.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from matmul_bench import kernels

RESULT_PREFIX = "@@prebuild "


def load_module(file: str) -> Any:
    """A kernel file's module, imported under its file's stem (Tilus reads its source)."""
    path = Path(file).resolve()
    kernels.use_kernel_dir()
    if path.parent == kernels.KERNEL_DIR:
        module = importlib.import_module(path.stem)  # the name the kernels and tests import it by
    elif path.stem in sys.modules and Path(getattr(sys.modules[path.stem], "__file__", "")).resolve() == path:
        module = sys.modules[path.stem]
    else:
        if str(path.parent) not in sys.path:  # an experiment imports its siblings (experiments/streamk.py)
            sys.path.append(str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return module


def load_class(file: str, cls: str) -> type:
    """The script class from a kernel file (see :func:`load_module`)."""
    found = getattr(load_module(file), cls, None)
    if not isinstance(found, type):
        raise ImportError(f"{file} defines no class {cls}")
    return found


def make_kernel(file: str, cls: str, config: dict[str, Any] | None) -> Any:
    """An instance of the script, pinned to ``config``; with None, the file's own choice at each problem
    (``common.PerProblem`` over its ``config_for``) where it has one, else Tilus's whole autotune space."""
    kernels.use_kernel_dir()
    import common

    script = load_class(file, cls)
    if config is not None:
        return common.pinned(script, config)()
    rule = getattr(load_module(file), "config_for", None)
    return common.PerProblem(script, rule) if callable(rule) else script()


def build_one(spec: dict[str, Any]) -> dict[str, Any]:
    """In this process: build the spec's kernel at every shape (and check it there when asked)."""
    import torch

    kernels.use_kernel_dir()
    import common

    kernel = make_kernel(spec["file"], spec["cls"], spec.get("config"))
    answer: dict[str, Any] = {"ok": True, "configs": {}, "checks": [], "error": None}
    for m, n, k in spec["shapes"]:
        key = f"{m}x{n}x{k}"
        if spec.get("check"):
            result = common.check(kernel, m, n, k, seed=spec.get("seed"))
            answer["checks"].append({"shape": key, "ok": result.ok, "bad": result.bad,
                                     "max_abs_err": result.max_abs_err, "report": result.describe()})  # fmt: skip
            answer["ok"] = answer["ok"] and result.ok
        else:
            # M is a run-time argument: any M builds (N, K); a per-problem rule is asked at the real M.
            built = kernel.kernel_for(m, n, k) if isinstance(kernel, common.PerProblem) else kernel
            a, b = common.random_operands(min(m, 256), n, k)
            common.matmul(built, a, b)
            torch.cuda.synchronize()
        answer["configs"][key] = spec.get("config") or tuned(kernel)
    return answer


def tuned(kernel: Any) -> dict[str, Any]:
    """The configuration Tilus picked; {} for a script with no autotune space."""
    kernels.use_kernel_dir()
    import common

    try:
        return common.tuned_config(kernel)
    except (AttributeError, KeyError, IndexError, TypeError):
        return {}


def run_spec(spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One spec in a fresh process; failures come back as {"ok": False, "error": ...} with its output's tail."""
    cmd = kernels.command("prebuild", json.dumps(spec))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=kernels.child_env())
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no answer after {timeout_s:.0f} s", "configs": {}, "checks": []}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    tail = (done.stderr or done.stdout)[-3000:]
    return {"ok": False, "error": f"exit status {done.returncode}:\n{tail}", "configs": {}, "checks": []}


def build_all(specs: Sequence[dict[str, Any]], jobs: int = 8, timeout_s: float = 1800) -> list[dict[str, Any]]:
    """Every spec in its own process, ``jobs`` at a time; the answers in the order of ``specs``."""
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(lambda spec: run_spec(spec, timeout_s), specs))


def main(argv: Sequence[str]) -> int:
    """``python -m matmul_bench prebuild SPEC``: build (and check) one spec here; print the answer."""
    spec = json.loads(argv[0])
    try:
        answer = build_one(spec)
    except Exception as exc:  # reported to the parent as an answer; the traceback goes to stderr
        import traceback

        traceback.print_exc()
        answer = {"ok": False, "configs": {}, "checks": [], "error": f"{type(exc).__name__}: {exc}"}
    print(RESULT_PREFIX + json.dumps(answer), flush=True)
    return 0 if answer["ok"] else 1
