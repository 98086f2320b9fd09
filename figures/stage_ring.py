"""V2/V3 stage ring: num_stages shared buffers, a full and an empty mbarrier each, a phase bit per wrap."""

from __future__ import annotations

from matplotlib.figure import Figure

import style

NAME = "stage_ring"

NUM_STAGES = 3  # as V2 and V3 run (their TUNED)
PRODUCER_K = 5  # the k-tile whose TMA load is in flight
CONSUMER_K = 3  # the k-tile WGMMA is reading
NUM_K_TILES = 12

WIDTH, HEIGHT = 90.0, 59.0
STAGE_X0, STAGE_W, STAGE_STEP = 10.0, 16.0, 19.0
STAGE_Y, STAGE_H = 29.0, 13.0


def stage_of(k: int) -> int:
    return k % NUM_STAGES


def phase_of(k: int) -> int:
    """The parity the consumer waits for on full[stage_of(k)]; it flips each time the index wraps to stage 0."""
    return (k // NUM_STAGES) & 1


def _stage_state(s: int) -> tuple[int, str, str]:
    """(k-tile held, state text, role) of stage s in the snapshot drawn."""
    for k in range(PRODUCER_K, CONSUMER_K - 1, -1):
        if stage_of(k) == s:
            if k == PRODUCER_K:
                return k, "TMA writing", "shared"
            if k == CONSUMER_K:
                return k, "WGMMA reading", "tensor"
            return k, "full, waiting", "shared"
    k = max(k for k in range(CONSUMER_K) if stage_of(k) == s)
    return k, "released (empty)", "idle"


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        f"Shared memory as a ring of num_stages = {NUM_STAGES} buffers",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )

    centres = []
    for s in range(NUM_STAGES):
        x = STAGE_X0 + s * STAGE_STEP
        k, state, role = _stage_state(s)
        style.box(ax, x, STAGE_Y, STAGE_W, STAGE_H, role=role, dashed=role == "idle", rounding=0.6)
        ax.text(
            x + STAGE_W / 2,
            STAGE_Y + STAGE_H - 1.5,
            f"stage {s}  ·  k-tile {k}",
            ha="center",
            va="center",
            fontsize=style.FONT_SIZE,
            fontweight="bold",
            zorder=4,
        )
        for j, (tile, dims) in enumerate((("A tile", "bm × bk"), ("B tile", "bn × bk"))):
            style.box(
                ax,
                x + 1.0 + j * 7.25,
                STAGE_Y + 3.0,
                6.75,
                6.5,
                tile,
                detail=dims,
                role="shared",
                fontsize=style.SMALL,
                bold=False,
                rounding=0.3,
                linewidth=0.8,
                zorder=4,
            )
        style.note(ax, x + STAGE_W / 2, STAGE_Y + 1.5, state, ha="center", color=style.INK, zorder=4)
        for j, bar in enumerate(("full", "empty")):
            style.box(
                ax,
                x + 0.5 + j * 7.75,
                STAGE_Y - 4.0,
                7.25,
                2.6,
                f"{bar}[{s}]",
                role="barrier",
                fontsize=style.SMALL,
                rounding=1.3,
                linewidth=0.9,
            )
        centres.append(x + STAGE_W / 2)

    # producer and consumer, each with its per-k-tile protocol
    top = STAGE_Y + STAGE_H
    ps, cs = stage_of(PRODUCER_K), stage_of(CONSUMER_K)
    style.box(
        ax,
        48.0,
        47.0,
        38.0,
        6.5,
        f"producer (TMA): k-tile {PRODUCER_K} → stage {ps}",
        detail=f"wait empty[{ps}] · expect_tx(full[{ps}], bytes) · TMA A, B",
        role="shared",
        fontsize=style.SMALL + 0.5,
    )
    style.box(
        ax,
        4.0,
        47.0,
        38.0,
        6.5,
        f"consumer (WGMMA): k-tile {CONSUMER_K} → stage {cs}",
        detail=f"wait full[{cs}] · WGMMA · arrive empty[{cs}]",
        role="tensor",
        fontsize=style.SMALL + 0.5,
    )
    style.arrow(ax, (centres[ps], 47.0), (centres[ps], top), colour=style.ROLES["shared"][1], linewidth=1.6)
    style.arrow(ax, (centres[cs], top), (centres[cs], 47.0), colour=style.ROLES["tensor"][1], linewidth=1.6)
    style.note(
        ax,
        (centres[cs] + centres[ps]) / 2,
        top + 2.3,
        "while one stage is multiplied, up to num_stages - 1 others load",
        ha="center",
    )

    # wrap-around: after the last stage the index returns to stage 0 and the phase bit flips
    left, right = STAGE_X0, STAGE_X0 + (NUM_STAGES - 1) * STAGE_STEP + STAGE_W
    y_mid, y_low = STAGE_Y + STAGE_H / 2, STAGE_Y - 6.5
    ax.plot(
        [right, right + 2.5, right + 2.5, left - 3.0, left - 3.0],
        [y_mid, y_mid, y_low, y_low, y_mid],
        color=style.INK,
        linewidth=1.3,
        solid_joinstyle="round",
        zorder=3,
    )
    style.arrow(ax, (left - 3.2, y_mid), (left, y_mid))
    ax.text(
        (left + right) / 2,
        y_low - 1.4,
        f"wrap-around: stage {NUM_STAGES - 1} → stage 0, phase bit flips",
        ha="center",
        va="center",
        fontsize=style.SMALL,
        fontweight="bold",
    )

    # which stage and phase each k-tile uses
    cell, x0 = 5.4, 16.0
    rows = (("k-tile", lambda k: str(k)), ("stage", lambda k: str(stage_of(k))), ("phase", lambda k: str(phase_of(k))))
    for r, (label, value) in enumerate(rows):
        y = 14.0 - r * 3.0
        ax.text(x0 - 1.0, y + 1.5, label, ha="right", va="center", fontsize=style.SMALL, fontweight="bold")
        for k in range(NUM_K_TILES):
            colours = style.GROUP_COLOURS[0] if phase_of(k) == 0 else style.GROUP_COLOURS[1]
            style.rect(ax, x0 + k * cell, y, cell, 3.0, colours=colours, linewidth=0.7)
            weight = "bold" if k in (PRODUCER_K, CONSUMER_K) else "normal"
            ax.text(
                x0 + (k + 0.5) * cell,
                y + 1.5,
                value(k),
                ha="center",
                va="center",
                fontsize=style.SMALL,
                fontweight=weight,
                zorder=3,
            )
    for k, who in ((CONSUMER_K, "consumer"), (PRODUCER_K, "producer")):
        ax.text(
            x0 + (k + 0.5) * cell,
            18.2,
            who,
            ha="center",
            va="center",
            fontsize=style.SMALL,
            fontweight="bold",
            zorder=3,
        )
    style.note(
        ax,
        x0,
        4.6,
        "consumer waits full[s] for phase (k div num_stages) mod 2; the producer waits empty[s] for the "
        "opposite bit,\nso its first round passes at once (the buffers start empty)",
        va="center",
    )
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
