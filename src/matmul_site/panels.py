"""The panel model's numbers, for V4's and V6's pages: which row panels of A and column panels of B each wave of
blocks reads (``raster.panels_per_wave``), and the DRAM bytes of a launch if every wave fetched each of its panels
once. A model, not a measurement: the pages set it beside Nsight Compute's DRAM bytes.

A version's walk is its tile order: a ``swizzle_size`` knob (V4 on) walks ``raster.tile_of``'s order; without one
(V0-V3) the grid is two-dimensional with x, the fastest, over M, so the blocks go down each tile column first,
which is ``tile_of`` with one group as tall as the grid. A wave is the blocks resident at once (the budget's count).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator
from dataclasses import dataclass

from matmul_data import budget, loader
from matmul_data.builds import BuildRecord
from matmul_data.decoding import Config
from matmul_site import numfmt

# The walks the pages quote: (value prefix, version whose build and tile it is, the swizzle_size, None: its own).
WALKS = (("v0", "v0", None), ("v1", "v1", None), ("v2", "v2", None), ("v3", "v3", None), ("v4", "v4", None),
         ("v6", "v6", None), ("v4-sw8", "v4", 8), ("v4-sw16", "v4", 16))  # fmt: skip


@dataclass(frozen=True)
class Launch:
    """One launch under the panel model: each wave's (A panels, B panels) and the bytes of one of each."""

    waves: list[tuple[int, int]]
    a_panel_bytes: int
    b_panel_bytes: int

    def wave_bytes(self, wave: tuple[int, int]) -> int:
        return wave[0] * self.a_panel_bytes + wave[1] * self.b_panel_bytes

    @property
    def total_bytes(self) -> int:
        """What the launch reads from DRAM if each wave fetches each of its panels once."""
        return sum(self.wave_bytes(w) for w in self.waves)

    @property
    def typical(self) -> tuple[int, int]:
        """The commonest wave (the last, partial wave aside)."""
        full = self.waves[:-1] or self.waves
        return collections.Counter(full).most_common(1)[0][0]

    @property
    def full_wave_bytes(self) -> list[int]:
        """The distinct byte counts of the full waves, smallest first."""
        return sorted({self.wave_bytes(w) for w in (self.waves[:-1] or self.waves)})


def launch(config: Config, shape: tuple[int, int, int], resident: int, swizzle_size: int | None) -> Launch:
    """The panel model of one launch: ``resident`` blocks per wave, walking with ``swizzle_size`` (None: down M)."""
    raster = loader.load("raster")
    m, n, k = shape
    tiles_m, tiles_n = math.ceil(m / config["block_m"]), math.ceil(n / config["block_n"])
    waves = raster.panels_per_wave(tiles_m, tiles_n, swizzle_size or tiles_m, resident)
    return Launch(waves, config["block_m"] * k * 2, config["block_n"] * k * 2)


def mib(nbytes: int) -> str:
    """Bytes in MiB, as the site writes MB (:data:`matmul_site.numfmt.UNITS`): "2204 MiB"."""
    return f"{nbytes / 2**20:.0f} MiB"


def panel_values(record: BuildRecord | None, shape: tuple[int, int, int], sm_count: int) -> Iterator[tuple[str, str]]:
    """``panels.<walk>.*`` for each of WALKS: the blocks in a wave (``blocks``); the commonest wave's panels (``a``,
    ``b``, ``count``) and bytes (``wave``); every full wave's bytes (``waves``: "84 or 100 MiB") and the most
    (``largest``); the launch's (``launch_mib``, ``launch_mb``); one panel's (``a_panel``, ``b_panel``)."""
    for key, version, swizzle in WALKS:
        if record is None or version not in record.versions:
            continue  # the page's sentence falls back whole (matmul_site.whole)
        build, config = budget.build_of(record, version)
        resident = budget.budget(build, config, shape, sm_count).resident_blocks
        found = launch(config, shape, resident, swizzle if swizzle is not None else config.get("swizzle_size"))
        a, b = found.typical
        yield f"panels.{key}.blocks", f"{resident}"
        yield f"panels.{key}.a", f"{a}"
        yield f"panels.{key}.b", f"{b}"
        yield f"panels.{key}.count", f"{a + b}"
        yield f"panels.{key}.wave", mib(found.wave_bytes((a, b)))
        yield f"panels.{key}.waves", " or ".join(mib(x).removesuffix(" MiB") for x in found.full_wave_bytes) + " MiB"
        yield f"panels.{key}.largest", mib(found.full_wave_bytes[-1])
        yield f"panels.{key}.launch_mib", mib(found.total_bytes)
        yield f"panels.{key}.launch_mb", numfmt.unit_text("mb", found.total_bytes / 1e6)
        yield f"panels.{key}.a_panel", mib(found.a_panel_bytes)
        yield f"panels.{key}.b_panel", mib(found.b_panel_bytes)
