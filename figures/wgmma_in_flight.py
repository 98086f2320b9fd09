"""V5 WGMMA groups in flight: wait_group(0) drains the tensor cores every k-tile, wait_group(1) keeps them fed."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

import style

NAME = "wgmma_in_flight"

NUM_GROUPS = 4
ISSUE, MMA, RELEASE = 3.0, 10.0, 1.5  # schematic durations, not measured: fence+mma+commit, one group, arrive
SCALE = 1.0

WIDTH, HEIGHT = 90.0, 55.0
T0 = 22.0
LANE_H = 4.0
IDLE = ("#fbd9d7", "#b3261e")


def schedule(in_flight: int) -> tuple[list[float], list[float], list[float]]:
    """Issue start of each group, its start on the tensor cores, and when its stage is released.

    in_flight = 0: wait_group(0) right after each commit, then release that group's stage.
    in_flight = 1: wait_group(1) after each commit, which only guarantees the previous group retired,
    so the previous group's stage is released; the last one is released after a final wait_group(0).
    """
    issue: list[float] = []
    tc: list[float] = []
    release: list[float] = []
    t = 0.0
    for k in range(NUM_GROUPS):
        issue.append(t)
        tc.append(max(t + ISSUE, tc[k - 1] + MMA if k else 0.0))
        if in_flight == 0:
            release.append(tc[k] + MMA)  # wait_group(0) returns when group k retired
            t = release[k] + RELEASE
        elif k:
            release.append(max(t + ISSUE, tc[k - 1] + MMA))  # wait_group(1) returns when group k-1 retired
            t = release[k - 1] + RELEASE
        else:
            t = t + ISSUE
    if in_flight:
        release.append(tc[-1] + MMA)
    return issue, tc, release


def _lanes(ax: Axes, y: float, title: str, subtitle: str, in_flight: int) -> None:
    issue, tc, release = schedule(in_flight)
    ax.text(1.5, y + 2 * LANE_H + 4.8, title, ha="left", va="center", fontweight="bold", fontsize=style.FONT_SIZE + 0.5)
    style.note(
        ax, 1.5 + style.text_width(title, style.FONT_SIZE + 0.5, bold=True) + 1.5, y + 2 * LANE_H + 4.8, subtitle
    )
    warp_y, tc_y = y + LANE_H + 1.5, y
    for ly, name in ((warp_y, "warp group"), (tc_y, "tensor cores")):
        ax.text(T0 - 1.5, ly + LANE_H / 2, name, ha="right", va="center", fontsize=style.SMALL + 0.5, fontweight="bold")
    end = tc[-1] + MMA
    style.rect(ax, T0, tc_y, end * SCALE, LANE_H, colours=IDLE, linewidth=0.5, hatch="////", zorder=1)
    style.rect(ax, T0, warp_y, (end + RELEASE) * SCALE, LANE_H, role="barrier", linewidth=0.5, hatch="////", zorder=1)
    for k in range(NUM_GROUPS):
        style.rect(ax, T0 + issue[k] * SCALE, warp_y, ISSUE * SCALE, LANE_H, role="register")
        ax.text(
            T0 + (issue[k] + ISSUE / 2) * SCALE,
            warp_y + LANE_H / 2,
            f"k{k}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
        )
        style.rect(ax, T0 + tc[k] * SCALE, tc_y, MMA * SCALE, LANE_H, role="tensor")
        ax.text(
            T0 + (tc[k] + MMA / 2) * SCALE,
            tc_y + LANE_H / 2,
            f"group k{k}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
        )
        # release of stage k: only once group k has retired on the tensor cores
        rx = T0 + release[k] * SCALE
        style.rect(ax, rx, warp_y, RELEASE * SCALE, LANE_H, role="barrier", colours=("#b79ad3", "#6a3d9a"))
        ax.plot(
            [rx, rx],
            [tc_y + LANE_H, warp_y],
            color=style.ROLES["barrier"][1],
            linewidth=0.9,
            linestyle=(0, (2, 1.5)),
            zorder=4,
        )
        ax.text(
            rx + RELEASE * SCALE / 2,
            warp_y + LANE_H + 1.0,
            f"s{k}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            color=style.ROLES["barrier"][1],
            zorder=3,
        )


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        "One consumer warp group, four k-tiles: how many WGMMA groups stay in flight",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )
    _lanes(ax, 33.0, "wait_group(0)", "issue, wait for it to retire, release, issue the next", 0)
    _lanes(ax, 13.5, "wait_group(1)", "issue the next group first; release the stage of the previous one", 1)
    style.legend_row(
        ax,
        3.0,
        6.8,
        [
            (style.ROLES["register"], "issue: fence, mma, commit_group"),
            (style.ROLES["barrier"], "wait_group / wait full[s]"),
            (("#b79ad3", "#6a3d9a"), "release: arrive empty[s]"),
        ],
        gap=3.0,
    )
    style.legend_row(
        ax,
        3.0,
        3.4,
        [
            (style.ROLES["tensor"], "group running on the tensor cores"),
            (IDLE, "tensor cores idle"),
        ],
        gap=3.0,
    )
    style.note(ax, 60.0, 3.4, "durations schematic, not measured")
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
