"""Provenance: the GPU (torch and NVML), the software, git, and NVML's clock and power sampled inside timed kernels."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from matmul_bench.protocol import Device
from matmul_data import model, paths

# Dense FP16/BF16 tensor-core peak (FP32 accumulate) by exact GPU name; the datasheets print the
# with-sparsity figure (1,979 TFLOPS), dense is half of it. Unlisted GPUs get null.
HOPPER_WHITEPAPER = "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
PUBLISHED_PEAKS: dict[str, tuple[float, str]] = {
    "NVIDIA H200": (989.4, "https://www.nvidia.com/en-us/data-center/h200/"),
    "NVIDIA H100 80GB HBM3": (989.4, HOPPER_WHITEPAPER),  # H100 SXM5
    "NVIDIA H100 PCIe": (756.0, HOPPER_WHITEPAPER),
}

Reading = tuple[float | None, float | None]  # (SM clock MHz, power W)


def utc_now() -> datetime.datetime:
    """Now, in UTC."""
    return datetime.datetime.now(datetime.UTC)


def git_commit(root: Path = paths.ROOT) -> str:
    """Short HEAD commit, with "-dirty" if any tracked file differs from it; "unknown" without git.
    ``$HOPPER_MATMUL_GIT_COMMIT`` names it instead, for a tree copied to the GPU machine without its history."""
    named = os.environ.get("HOPPER_MATMUL_GIT_COMMIT", "").strip()
    if named:
        return named

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if dirty else "")


# The wheels that ship the cuBLAS torch loads (CUDA 13 builds, then older names).
CUBLAS_PACKAGES = ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12")


def package_version(package: str) -> str | None:
    """The installed version of a distribution (``"quack-kernels"``), None when it is not installed."""
    import importlib.metadata  # here: a quarter of a second that only the probe and the peers need

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def software() -> dict[str, str]:
    """Versions of what the worker ran with (called inside a worker, where torch is imported)."""
    import torch

    cublas = next((v for v in map(package_version, CUBLAS_PACKAGES) if v), "unknown")
    return {"cuda": torch.version.cuda or "none", "torch": torch.__version__,
            "tilus": package_version("tilus") or "not installed", "cublas": cublas,
            "python": platform.python_version()}  # fmt: skip


class NoHopperGPU(RuntimeError):
    """No Hopper GPU here: the message says all there is to say (no traceback)."""


def require_hopper() -> None:
    """Raise NoHopperGPU unless torch sees a Hopper GPU as CUDA device 0 (no torch counts as no GPU)."""
    try:
        import torch
    except ImportError as exc:
        raise NoHopperGPU('torch is not installed: the benchmark needs torch with CUDA (pip install -e ".[kernels]") '
                          "and an NVIDIA Hopper GPU") from exc  # fmt: skip
    if not torch.cuda.is_available():
        raise NoHopperGPU("no CUDA GPU is visible: the benchmark needs an NVIDIA Hopper GPU (H100/H200, sm_90)")
    major, minor = torch.cuda.get_device_capability(0)
    if (major, minor) != (9, 0):
        name = torch.cuda.get_device_name(0)
        raise NoHopperGPU(f"{name} is sm_{major}{minor}; the kernels use WGMMA and TMA and need sm_90 (Hopper)")


def require_hopper_for(recorded: model.Results | None, source: str, consequence: str) -> None:
    """Raise NoHopperGPU unless a Hopper GPU is here and ``recorded`` (the results file that ``source`` names, None for
    none) holds results of this GPU model: one file per GPU model, as record refuses another's. ``consequence`` ends
    the mismatch's message ("nothing was built")."""
    require_hopper()
    here = device().name
    if recorded is not None and recorded.gpu.name != here:
        raise NoHopperGPU(f"{source} holds results of {recorded.gpu.name!r}, not of this {here!r}; {consequence}")


def device() -> Device:
    """CUDA device 0 as torch sees it, plus what NVML adds (driver, clock and power limits)."""
    import torch

    require_hopper()
    props = torch.cuda.get_device_properties(0)
    major, minor = torch.cuda.get_device_capability(0)
    uuid = str(getattr(props, "uuid", "") or "")
    return Device.of(name=props.name, sm_count=props.multi_processor_count, compute_capability=f"{major}.{minor}",
                     memory_gb=round(props.total_memory / 2**30, 1), uuid=uuid, **nvml_limits(uuid))  # fmt: skip


def _quiet(read: Callable[[], Any], default: Any = None) -> Any:
    """``read()``, or ``default`` where it raises (NVML has no such reading here, or no driver)."""
    try:
        return read()
    except Exception:
        return default


def _nvml_handle(uuid: str) -> Any:
    """An NVML handle for the CUDA device (by UUID, so CUDA_VISIBLE_DEVICES cannot mismatch); None if unavailable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no nvidia-ml-py, or no driver: sampling is skipped and recorded as null
        return None
    by_uuid = uuid and _quiet(lambda: pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid.removeprefix('GPU-')}"))
    return by_uuid or _quiet(lambda: pynvml.nvmlDeviceGetHandleByIndex(0))


def nvml_limits(uuid: str) -> dict[str, Any]:
    """The driver version and the clock and power limits NVML reports (null where it cannot)."""
    handle = _nvml_handle(uuid)
    if handle is None:
        return {"driver": "unknown", "sm_max": None, "mem_max": None, "power_limit_w": None}
    import pynvml

    driver = _quiet(pynvml.nvmlSystemGetDriverVersion, "unknown")
    return {"driver": _quiet(lambda: driver.decode() if isinstance(driver, bytes) else str(driver), "unknown"),
            "sm_max": _quiet(lambda: float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))),
            "mem_max": _quiet(lambda: float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM))),
            "power_limit_w": _quiet(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)}  # fmt: skip


def nvml_reader(uuid: str) -> Callable[[], Reading] | None:
    """A function reading (SM clock MHz, power W) now; None when NVML is not available."""
    handle = _nvml_handle(uuid)
    if handle is None:
        return None
    import pynvml

    def read() -> Reading:
        clock = _quiet(lambda: float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)))
        # The board's instantaneous power where the driver reports it, not the 1 s average of GetPowerUsage.
        instant = _quiet(lambda: pynvml.nvmlDeviceGetFieldValues(handle, [pynvml.NVML_FI_DEV_POWER_INSTANT])[0])
        power = _quiet(lambda: instant.value.uiVal / 1000.0 if instant.nvmlReturn == 0 else None)
        power = power or _quiet(lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
        # A zero is NVML having no reading, not a measurement (and the results file takes positive numbers only).
        return (clock if clock else None), (power if power else None)

    return read


Span = tuple[float, float]  # (start, end) in time.perf_counter seconds


class WindowSampler:
    """Polls ``read`` every ``interval_s`` while a window is open and once as it closes; readings keep their time."""

    def __init__(self, read: Callable[[], Reading] | None, interval_s: float = 0.005) -> None:
        self._read, self._interval_s = read, interval_s
        self._tag: str | None = None  # the open window's
        self._lock = threading.Lock()
        self._samples: dict[str, list[tuple[float, Reading]]] = {}
        self._stop, self._open = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        if read is not None:
            self._thread.start()

    def _take(self) -> None:
        with self._lock:
            tag = self._tag
        if tag is not None and self._read is not None:
            before = time.perf_counter()
            reading = self._read()
            at = (before + time.perf_counter()) / 2.0
            with self._lock:
                self._samples.setdefault(tag, []).append((at, reading))

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._open.wait(0.1)  # sleep while no window is open: no samples outside the timed windows
            if self._open.is_set():
                self._take()
                self._stop.wait(self._interval_s)

    @contextlib.contextmanager
    def window(self, tag: str) -> Iterator[None]:
        """Sample under ``tag`` while the block runs."""
        with self._lock:
            self._tag = tag
        self._open.set()
        try:
            yield
        finally:
            self._take()  # at least one reading per window, even one shorter than the polling interval
            self._open.clear()
            with self._lock:
                self._tag = None

    def take(self, tag: str, spans: list[Span] | None = None) -> tuple[list[float], list[float]]:
        """The (clocks, powers) sampled under ``tag`` since the last take (inside ``spans`` if given); forget them."""
        with self._lock:
            timed = self._samples.pop(tag, [])
        if spans is not None:
            timed = [(at, r) for at, r in timed if any(start <= at <= end for start, end in spans)]
        return [c for _, (c, _) in timed if c is not None], [p for _, (_, p) in timed if p is not None]

    def close(self) -> None:
        """Stop the polling thread."""
        self._stop.set()
        self._open.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


def gpu_record(found: Device) -> model.Gpu:
    """The results file's ``gpu`` section from what a worker's probe found."""
    peak, source = PUBLISHED_PEAKS.get(found.name, (None, None))
    return model.Gpu.of(name=found.name, sm_count=found.sm_count, compute_capability=found.compute_capability,
                        memory_gb=found.memory_gb, driver=found.driver or "unknown",
                        clocks_mhz=model.Clocks.of(sm_max=found.sm_max, mem_max=found.mem_max),
                        power_limit_w=found.power_limit_w, published_dense_fp16_tflops=peak,
                        published_source=source)  # fmt: skip
