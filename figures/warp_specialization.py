"""V3/V4 warp specialization: a producer warp issuing TMA and consumer warp groups issuing WGMMA."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

import style

NAME = "warp_specialization"

NUM_STAGES = 3  # as V2 and V3 run (their TUNED)
NUM_K = 7
ISSUE, LATENCY, MMA = 3.0, 5.0, 7.0  # schematic durations (not measured): TMA issue, bytes in flight, one k-tile

WIDTH, HEIGHT = 92.0, 53.5
T0 = 21.0  # x of time zero
PROD_Y, CONS_Y, LANE_H = 38.5, 26.0, 5.0


def schedule() -> tuple[list[float], list[float], list[float]]:
    """Start of each TMA issue, time its bytes land, start of each WGMMA, under the full/empty protocol."""
    p_start: list[float] = []
    land: list[float] = []
    c_start: list[float] = []
    for k in range(NUM_K):
        ready = p_start[k - 1] + ISSUE if k else 0.0
        if k >= NUM_STAGES:  # stage k mod S is reused: wait until the consumer released k - S (empty barrier)
            ready = max(ready, c_start[k - NUM_STAGES] + MMA)
        p_start.append(ready)
        land.append(ready + ISSUE + LATENCY)
        c_start.append(max(land[k], c_start[k - 1] + MMA if k else 0.0))
    return p_start, land, c_start


def _warps(ax: Axes, y: float, title: str, groups: list[tuple[str, int, int]], total: str) -> None:
    """One row of warp chips: (label, first warp, warps) per group."""
    ax.text(3.0, y + 1.6, title, ha="left", va="center", fontsize=style.FONT_SIZE, fontweight="bold")
    x0, chip = 12.0, 5.2
    for i, (label, first, count) in enumerate(groups):
        role = "shared" if label.startswith("producer") else "tensor"
        colours = style.ROLES[role] if role == "shared" else (("#d3eed3", "#2d7a32"), ("#b5dfb7", "#2d7a32"))[i % 2]
        for w in range(first, first + count):
            style.box(
                ax,
                x0 + w * chip + 0.15,
                y,
                chip - 0.3,
                3.2,
                f"w{w}",
                colours=colours,
                fontsize=style.SMALL,
                rounding=0.4,
                linewidth=0.9,
            )
        style.note(ax, x0 + (first + count / 2) * chip, y - 1.3, label, ha="center")
    ax.text(x0 + 9 * chip + 2.0, y + 1.6, total, ha="left", va="center", fontsize=style.FONT_SIZE)


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        "Warp specialization: one producer warp, consumer warp group(s)",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )

    p_start, land, c_start = schedule()
    end = c_start[-1] + MMA
    blue, purple = style.ROLES["shared"][1], style.ROLES["barrier"][1]
    for y, name, detail in (
        (PROD_Y, "producer warp", "TMA: k-tile kN → stage sM"),
        (CONS_Y, "consumer warp group", "4 warps, issue WGMMA"),
    ):
        ax.text(2.0, y + LANE_H / 2 + 0.9, name, ha="left", va="center", fontsize=style.FONT_SIZE, fontweight="bold")
        style.note(ax, 2.0, y + LANE_H / 2 - 1.0, detail)
        style.rect(ax, T0, y, end + 0.5, LANE_H, role="idle", linewidth=0.6, zorder=1)

    for k in range(NUM_K):
        s = k % NUM_STAGES
        style.rect(ax, T0 + p_start[k], PROD_Y, ISSUE, LANE_H, role="shared")
        ax.text(
            T0 + p_start[k] + ISSUE / 2,
            PROD_Y + LANE_H / 2,
            f"k{k}\ns{s}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
            linespacing=1.0,
        )
        style.rect(ax, T0 + c_start[k], CONS_Y, MMA, LANE_H, role="tensor")
        ax.text(
            T0 + c_start[k] + MMA / 2,
            CONS_Y + LANE_H / 2,
            f"WGMMA\nk{k} · s{s}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
            linespacing=1.0,
        )
        # full[s]: the TMA bytes landed, the consumer may read stage s
        style.arrow(
            ax, (T0 + p_start[k] + ISSUE, PROD_Y), (T0 + c_start[k] + 0.3, CONS_Y + LANE_H), colour=blue, linewidth=0.9
        )
        if k >= NUM_STAGES:  # empty[s]: the consumer finished k - S, the producer may overwrite stage s
            t_free = c_start[k - NUM_STAGES] + MMA
            style.arrow(
                ax,
                (T0 + t_free, CONS_Y + LANE_H),
                (T0 + p_start[k] + 0.2, PROD_Y),
                colour=purple,
                linewidth=1.1,
                dashed=True,
            )
            if p_start[k] > p_start[k - 1] + ISSUE:
                style.rect(
                    ax,
                    T0 + p_start[k - 1] + ISSUE,
                    PROD_Y,
                    p_start[k] - p_start[k - 1] - ISSUE,
                    LANE_H,
                    role="barrier",
                    linewidth=0.6,
                    hatch="////",
                )
    style.rect(ax, T0, CONS_Y, c_start[0], LANE_H, role="barrier", linewidth=0.6, hatch="////")
    style.note(ax, T0 + c_start[0] / 2, CONS_Y - 1.2, "wait full[0]", ha="center", color=purple)
    gap = p_start[NUM_STAGES - 1] + ISSUE
    style.note(
        ax,
        T0 + gap,
        PROD_Y + LANE_H + 1.2,
        f"all {NUM_STAGES} stages in flight: wait empty[0]",
        ha="left",
        color=purple,
    )

    # time axis and the arrow legend
    style.arrow(ax, (T0, CONS_Y - 3.2), (T0 + end + 3.0, CONS_Y - 3.2), colour=style.MUTED, linewidth=0.9)
    style.note(ax, T0 + end + 4.0, CONS_Y - 3.2, "time", ha="left")
    ly = PROD_Y + LANE_H + 4.2
    style.arrow(ax, (T0, ly), (T0 + 4.0, ly), colour=blue, linewidth=1.1)
    style.note(ax, T0 + 5.0, ly, "full[s]: TMA bytes landed in stage s", color=style.INK)
    style.arrow(ax, (T0 + 40.0, ly), (T0 + 44.0, ly), colour=purple, linewidth=1.1, dashed=True)
    style.note(ax, T0 + 45.0, ly, "empty[s]: consumer done with stage s", color=style.INK)

    # why 5 and 9 warps: a warp group is 4 consecutive warps starting at a multiple of 4
    _warps(ax, 10.5, "V3", [("consumer warp group 0", 0, 4), ("producer", 4, 1)], "5 warps = 160 threads")
    _warps(
        ax,
        3.6,
        "V4",
        [("consumer warp group 0", 0, 4), ("consumer warp group 1", 4, 4), ("producer", 8, 1)],
        "9 warps = 288 threads",
    )
    style.note(
        ax,
        3.0,
        18.0,
        "WGMMA is issued by a whole warp group: 4 consecutive warps starting at a multiple of 4.\n"
        "TMA needs only one warp, so the producer is one extra warp placed after the consumer groups.",
    )
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
