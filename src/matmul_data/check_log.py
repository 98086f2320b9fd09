"""The V9 development check's log (``check v9-menu --json``, ``plots/results/logs/v9-check-*.json``) as typed objects:
the correctness checks of V9's menu, and per shape each implementation's times round by round with its configuration.

``CheckLog.from_json(data)`` decodes the log's dict; ``to_json()`` gives it back key for key, so that the log written
with ``json.dumps(...)`` round-trips byte for byte.
"""

from __future__ import annotations

import dataclasses

from matmul_data.decoding import COUNT0, FLAG, NONNEGATIVE, TEXT, Config, Model, key


@dataclasses.dataclass(frozen=True, kw_only=True)
class MenuCheck(Model):
    """One build checked against float64 at one shape: elements outside tolerance and the largest error."""

    label: str = key(TEXT)  # the kernel file's stem and its pinned configuration
    shape: str = key(TEXT)  # "MxNxK"
    ok: bool = key(FLAG)
    bad: int = key(COUNT0)
    max_abs_err: float | None = key(NONNEGATIVE, null=True)  # null: no finite element
    report: str = key(TEXT)  # the line the check printed


@dataclasses.dataclass(frozen=True, kw_only=True)
class MenuTiming(Model):
    """One shape timed: each implementation's milliseconds per round, and the configuration of each but cuBLAS."""

    shape: tuple[int, int, int] = key()
    ms: dict[str, tuple[float, ...]] = key()  # implementation -> its time in each round, in the rounds' order
    configs: dict[str, Config] = key()


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckLog(Model):
    """The whole log: the GPU it ran on, the checks, the timings."""

    gpu: str = key(TEXT)
    checks: tuple[MenuCheck, ...] = key()
    timings: tuple[MenuTiming, ...] = key()
