"""Tile rasterization: the order in which a 1-D grid of blocks walks the output tiles.

A block of a matmul reads one row panel of A (block_m x K) and one column panel of
B (block_n x K). Blocks that run at the same time and read the same panels find them
in L2 instead of HBM. Plain row-major order (block id -> tile row, then column) walks
a whole row of C before it moves down: at 8192^3 with 128 x 256 tiles (64 x 32 tiles),
a wave of 132 blocks covers four tile rows and a bit, so it touches 5 A panels but
all 32 B panels. Raster groups (the ``swizzle_size`` knob: a tile order, unrelated to
the shared-memory swizzle) regroup the walk: the tile rows are cut into groups of
``swizzle_size`` rows, and inside a group the blocks go down a column before moving
right, so ``swizzle_size`` consecutive blocks share one B panel and a wave touches
about ``132 / swizzle_size`` B panels and ``swizzle_size`` A panels (16: 16 and 9).

Two versions of the same mapping live here, step for step:

- :func:`tile_of`, plain Python: the model that tests, figures and the docs use
  (importing this module needs no Tilus).
- :class:`TileRaster`, a ``tilus.Class`` that computes the same thing inside a
  kernel; its divisors are fixed at launch, so ``fast_divmod`` turns each division
  into a multiply-high and a shift.
"""

from collections.abc import Iterator

try:  # the kernels need Tilus; the model above the kernel helper does not
    import tilus
    from tilus import int32

    _TilusClass: type = tilus.Class
except ImportError:  # e.g. a docs build: TileRaster is then an inert placeholder
    _TilusClass, int32 = object, int


def _check_grid(num_tiles_m: int, num_tiles_n: int, swizzle_size: int) -> None:
    for name, value in (("num_tiles_m", num_tiles_m), ("num_tiles_n", num_tiles_n), ("swizzle_size", swizzle_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def tile_of(block_id: int, num_tiles_m: int, num_tiles_n: int, swizzle_size: int) -> tuple[int, int]:
    """The output tile (tile_m, tile_n) that block ``block_id`` computes; the model of :class:`TileRaster`."""
    _check_grid(num_tiles_m, num_tiles_n, swizzle_size)
    if not 0 <= block_id < num_tiles_m * num_tiles_n:
        raise ValueError(f"block_id {block_id} is outside the {num_tiles_m}x{num_tiles_n} tile grid")
    # --- model: start (the kernel's TileRaster.tile_of below takes the same steps)
    if swizzle_size == 1:
        # Bypass: plain row-major order.
        tile_m, tile_n = divmod(block_id, num_tiles_n)
    else:
        # Which group of swizzle_size tile rows, and where inside it.
        group, in_group = divmod(block_id, swizzle_size * num_tiles_n)
        first_m = group * swizzle_size
        # Only the last group can be narrower (when swizzle_size does not divide num_tiles_m).
        last_group = (num_tiles_m - 1) // swizzle_size
        if group < last_group:
            # Column-major inside the group: consecutive blocks share tile_n, so one B panel.
            tile_n, row = divmod(in_group, swizzle_size)
        else:
            tile_n, row = divmod(in_group, num_tiles_m - last_group * swizzle_size)
        tile_m = first_m + row
    # --- model: end
    return tile_m, tile_n


def raster_order(num_tiles_m: int, num_tiles_n: int, swizzle_size: int) -> list[tuple[int, int]]:
    """Every block's tile, in block-id order."""
    _check_grid(num_tiles_m, num_tiles_n, swizzle_size)
    return [tile_of(b, num_tiles_m, num_tiles_n, swizzle_size) for b in range(num_tiles_m * num_tiles_n)]


def waves(num_tiles_m: int, num_tiles_n: int, swizzle_size: int, wave_size: int) -> Iterator[list[tuple[int, int]]]:
    """The tiles of each wave of ``wave_size`` consecutive blocks (blocks that run at the same time)."""
    if wave_size < 1:
        raise ValueError(f"wave_size must be positive, got {wave_size}")
    order = raster_order(num_tiles_m, num_tiles_n, swizzle_size)
    for start in range(0, len(order), wave_size):
        yield order[start : start + wave_size]


def panels_per_wave(num_tiles_m: int, num_tiles_n: int, swizzle_size: int, wave_size: int) -> list[tuple[int, int]]:
    """(distinct A panels, distinct B panels) that each wave reads: the L2 working set, in panels."""
    return [
        (len({m for m, _ in wave}), len({n for _, n in wave}))
        for wave in waves(num_tiles_m, num_tiles_n, swizzle_size, wave_size)
    ]


class TileRaster(_TilusClass):
    """In-kernel twin of :func:`tile_of`: the same steps; fast_divmod for the divisors fixed at launch."""

    def __init__(self, num_tiles_m: int32, num_tiles_n: int32, swizzle_size: int):
        self.swizzle_size: int = swizzle_size
        self.num_tiles_n: int32 = num_tiles_n
        self.num_tiles: int32 = num_tiles_m * num_tiles_n
        # Grid constants, computed once per block from the problem size.
        self.group_size: int32 = swizzle_size * num_tiles_n
        self.last_group: int32 = (num_tiles_m - 1) // swizzle_size
        self.last_group_rows: int32 = num_tiles_m - self.last_group * swizzle_size

    def tile_of(self, block_id: int32):
        tile_m: int32 = 0
        tile_n: int32 = 0
        # --- kernel: start (same steps as the model tile_of above)
        if self.swizzle_size == 1:
            # Bypass: plain row-major order.
            tile_m, tile_n = self.fast_divmod(block_id, self.num_tiles_n)
        else:
            # Which group of swizzle_size tile rows, and where inside it.
            group, in_group = self.fast_divmod(block_id, self.group_size)
            first_m = group * self.swizzle_size
            row: int32 = 0
            # Only the last group can be narrower; its row count is a grid constant too.
            if group < self.last_group:
                # Column-major inside the group: consecutive blocks share tile_n, so one B panel.
                tile_n, row = self.fast_divmod(in_group, self.swizzle_size)
            else:
                tile_n, row = self.fast_divmod(in_group, self.last_group_rows)
            tile_m = first_m + row
        # --- kernel: end
        return tile_m, tile_n
