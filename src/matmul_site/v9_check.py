"""The development check behind V9's model, for :mod:`.render`: its values, its table and its caption.

The check is a log, ``plots/results/logs/v9-check-fitted-2026-12-04.json`` (``check v9-menu --fitted --menu``): one
process, a few rounds, no warm-up, every (tile, sharing) of V9's menu at the field set's fitted half; the tile model's
CLUSTER_COST is fitted to it. It is shown as that, never as the record.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path

from matmul_data import field, loader, paths
from matmul_data.check_log import CheckLog, MenuTiming
from matmul_site import numfmt
from matmul_site.captions import Table, caption
from matmul_site.field_pages import tile_text
from matmul_site.numfmt import NOT_MEASURED, number_word, shape_name

CHECK_LOG = paths.RESULTS_DIR / "logs" / "v9-check-fitted-2026-12-04.json"
CHECK_NAME = "v9-check"  # its values: v9-check.rounds, v9-check:4096x4096x5000.pick, ...


def check_date() -> str:
    """The day the development check ran: its log's name ends with it."""
    return "-".join(CHECK_LOG.stem.split("-")[-3:])


def check_log(path: Path = CHECK_LOG) -> CheckLog | None:
    """The development check's log (``check v9-menu --json``), or None where it is not in the repository."""
    return CheckLog.from_json(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


def _ratio(ms: dict[str, tuple[float, ...]], over: str, impl: str) -> float:
    """The median over rounds of ``over``'s time over ``impl``'s in the same round (above 1: impl is quicker)."""
    return statistics.median(a / b for a, b in zip(ms[over], ms[impl], strict=True))


class Checked:
    """One shape of the development check: V8 (its own pick) and every pinned (tile, sharing) of V9's menu."""

    def __init__(self, timing: MenuTiming) -> None:
        self.shape = timing.shape
        self.ms = timing.ms
        self.configs = timing.configs
        self.menu = [name for name in self.ms if name.startswith("v9-")]  # "V9" is the rule of its day: left out
        model = loader.load("tile_model").choose_shared(*self.shape)
        self.pick = f"v9-{model.tile.name}-{model.share}"

    def to_cublas(self, impl: str) -> float:
        return _ratio(self.ms, "cuBLAS", impl)

    def over_v8(self, impl: str) -> float:
        return _ratio(self.ms, "V8", impl)

    def best(self, clustered: bool | None = None) -> str:
        """The quickest of the menu (against cuBLAS), of those with a cluster, or of those without."""
        menu = [m for m in self.menu if clustered is None or m.endswith("-none") != clustered]
        return max(menu, key=self.to_cublas)

    def pair_over_alone(self) -> float:
        """The best pair's speed over the best tile alone's, the median over rounds of the ratio in each round."""
        return _ratio(self.ms, self.best(clustered=False), self.best(clustered=True))

    def name(self, impl: str, compact: bool = False) -> str:
        c = self.configs[impl]
        return tile_text(c["block_m"], c["block_n"], c.get("share", "none"), compact)

    def cell(self, impl: str) -> str:
        return f"{self.name(impl, compact=True)}: {self.to_cublas(impl):.2f}"

    @property
    def aligned(self) -> bool:
        """Rows on L2's sectors (K % 16 == 0) and C's rows on 16 bytes (N % 8 == 0): neither special case."""
        return self.shape[2] % 16 == 0 and self.shape[1] % 8 == 0


def checked(log: CheckLog | None) -> list[Checked]:
    return [Checked(t) for t in (log.timings if log else ())]


def check_values(log: CheckLog | None) -> Iterator[tuple[str, str]]:
    """What the V9 page may say of the development check: per shape V8's pick, V9's pick now and the menu's best,
    each against cuBLAS and over V8; and how far the best pair and the best single block lie apart where nothing is
    special (K % 16 == 0, N % 8 == 0)."""
    shapes = checked(log)
    if log is None or not shapes:
        return
    yield f"{CHECK_NAME}.date", check_date()
    yield f"{CHECK_NAME}.shapes", number_word(len(shapes))
    yield f"{CHECK_NAME}.rounds", number_word(len(shapes[0].ms["cuBLAS"]))
    yield f"{CHECK_NAME}.gpu", log.gpu
    for s in shapes:
        key = f"{CHECK_NAME}:{shape_name(s.shape)}"
        yield f"{key}.v8", f"{s.to_cublas('V8'):.2f}"
        yield f"{key}.v8_tile", s.name("V8")
        best = (("best", s.best()), ("best_alone", s.best(clustered=False)), ("best_pair", s.best(clustered=True)))
        for what, impl in (("pick", s.pick), *best):
            yield f"{key}.{what}", f"{s.to_cublas(impl):.2f}"
            yield f"{key}.{what}_tile", s.name(impl)
            yield f"{key}.{what}_over_v8", f"{s.over_v8(impl):.2f}"
    pairs = [s.pair_over_alone() for s in shapes if s.aligned]
    if pairs:
        yield f"{CHECK_NAME}.aligned_count", number_word(len(pairs))
        yield f"{CHECK_NAME}.pair_low", f"{min(pairs):.2f}"
        yield f"{CHECK_NAME}.pair_high", f"{max(pairs):.2f}"
    ragged = [s.pair_over_alone() for s in shapes if s.shape[2] % 16]  # rows off L2's 32-byte sectors
    if ragged:
        yield f"{CHECK_NAME}.ragged_pair_low", f"{min(ragged):.2f}"
        yield f"{CHECK_NAME}.ragged_pair_high", f"{max(ragged):.2f}"


def check_table(log: CheckLog | None) -> Table:
    """Per shape of the development check: the best tile alone, the best pair and the fitted model's pick
    (the timed cell of that tile and sharing: the log's V9 row ran the choice from before the fit), each as its tile
    and its median ratio to cuBLAS over the rounds; and the best pair over the best tile alone, paired round by round
    (the ratio the page's ``pair_low`` to ``pair_high`` quotes), not the quotient of the two columns."""
    header = ["Shape", "Best alone", "Best pair", "Pair ÷ alone", "Fitted model's pick"]  # V8: the field table
    shapes = checked(log)
    if not shapes:
        return [header, [f"The development check is {NOT_MEASURED}.", *[""] * (len(header) - 1)]]
    named = field.by_shape()
    return [header, *([f"{named[s.shape].name}: {numfmt.shape_text(s.shape)}" if s.shape in named else
                       numfmt.shape_text(s.shape), s.cell(s.best(clustered=False)),
                       s.cell(s.best(clustered=True)), f"{s.pair_over_alone():.2f}", s.cell(s.pick)]
                      for s in shapes)]  # fmt: skip


def check_caption(log: CheckLog | None) -> str:
    shapes = checked(log)
    if log is None or not shapes:
        return caption(f"The development check is {NOT_MEASURED}.")
    rounds = len(shapes[0].ms["cuBLAS"])
    return caption(f"One development process on {log.gpu}, {check_date()}: each cell a tile and its median over "
                   f"{rounds} rounds of cuBLAS's time over its own (Pair ÷ alone: alone's time over the "
                   "pair's, per round), no warm-up; not the replicated record. Log "
                   f"``plots/results/logs/{CHECK_LOG.name}``.")  # fmt: skip
