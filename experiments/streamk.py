"""Stream-K for the last wave: which tiles, and which K-tiles of them, each persistent block computes.

A persistent kernel with one block per SM and ``num_tiles`` output tiles runs
``ceil(num_tiles / num_sms)`` waves; when ``num_tiles % num_sms`` is not zero the last
wave leaves SMs idle (at 8192^3 with 128 x 256 tiles: 2048 = 15 x 132 + 68, so 64 SMs
wait through the 16th tile). Stream-K (Osama et al., PPoPP 2023) cuts work along K
instead: here, as in its "data-parallel + one stream-K wave" hybrid, the first tiles
go round-robin as before (block ``b`` takes tiles ``b, b + num_sms, ...``), and the
last ``num_sms + num_tiles % num_sms`` tiles are laid out as one long list of
(tile, K-tile) units that is cut into ``num_sms`` equal, contiguous ranges, one per
block. Every block then finishes at about the same time.

Each range holds at least one tile's worth of K-tiles, so a tile is cut at most once,
between two consecutive blocks ``b`` and ``b + 1``:

- block ``b + 1`` computes the tile's *last* K-tiles first thing in its range (a piece
  with ``k_first > 0``): it writes its fp32 partial sums to a workspace slot of its own
  and raises a flag;
- block ``b`` computes the tile's *first* K-tiles last thing in its range (a piece with
  ``k_first == 0`` and ``k_stop < num_k_tiles``): it waits for block ``b + 1``'s flag,
  adds the partial sums, and stores C as usual. The flag is normally up by then: the
  other block did that work first.

Two versions of the same walk live here, step for step, as in ``raster.py``:

- :func:`pieces`, plain Python: the model that tests and the docs use (no Tilus needed).
- :class:`StreamKSchedule`, a ``tilus.Class`` that walks the same pieces inside a kernel.
"""

from dataclasses import dataclass

try:  # the kernels need Tilus; the model above the kernel helper does not
    import tilus
    from tilus import int32

    _TilusClass: type = tilus.Class
except ImportError:  # e.g. a docs build: StreamKSchedule is then an inert placeholder
    _TilusClass, int32 = object, int


@dataclass(frozen=True)
class Piece:
    """K-tiles ``[k_first, k_stop)`` of output tile ``tile`` (an index in raster order)."""

    tile: int
    k_first: int
    k_stop: int


def stream_k_tiles(num_tiles: int, num_sms: int) -> int:
    """How many of the last tiles are split along K: one full wave plus the partial one, or none."""
    if num_tiles < 1 or num_sms < 1:
        raise ValueError(f"num_tiles and num_sms must be positive, got {num_tiles} and {num_sms}")
    tail = num_tiles % num_sms
    # With no partial wave (or less than one wave in all) every SM already gets whole tiles.
    return num_sms + tail if num_tiles > num_sms and tail != 0 else 0


def pieces(block: int, num_tiles: int, num_k_tiles: int, num_sms: int) -> list[Piece]:
    """The pieces block ``block`` computes, in order; the model of :class:`StreamKSchedule`."""
    if not 0 <= block < num_sms:
        raise ValueError(f"block {block} is outside the persistent grid of {num_sms}")
    if num_k_tiles < 1:
        raise ValueError(f"num_k_tiles must be positive, got {num_k_tiles}")
    # --- model: start (the kernel's StreamKSchedule takes the same steps)
    split_tiles = stream_k_tiles(num_tiles, num_sms)
    whole_tiles = num_tiles - split_tiles  # handed out round-robin, as in V6
    out = [Piece(tile, 0, num_k_tiles) for tile in range(block, whole_tiles, num_sms)]
    # This block's contiguous share of the remaining (tile, K-tile) units.
    units = split_tiles * num_k_tiles
    unit, end = block * units // num_sms, (block + 1) * units // num_sms
    while unit < end:
        tile, k_first = divmod(unit, num_k_tiles)
        k_stop = min(num_k_tiles, k_first + end - unit)
        out.append(Piece(whole_tiles + tile, k_first, k_stop))
        unit += k_stop - k_first
    # --- model: end
    return out


class StreamKSchedule(_TilusClass):
    """In-kernel twin of :func:`pieces`: ``tile``, ``k_first`` and ``k_stop`` name the current piece.

    Walk it with ``start(block)``, then ``while schedule.more(): ...; schedule.advance()``. Every role
    of the block (producer and consumers) walks the same pieces in the same order.
    """

    def __init__(self, num_tiles: int32, num_k_tiles: int32, num_sms: int, split: bool):
        self.num_sms: int = num_sms
        self.num_tiles: int32 = num_tiles
        self.num_k_tiles: int32 = num_k_tiles
        self.whole_tiles: int32 = num_tiles
        if split:  # a build-time switch: False gives V6's round-robin over whole tiles
            tail: int32 = num_tiles % num_sms
            if num_tiles > num_sms and tail != 0:
                self.whole_tiles = num_tiles - num_sms - tail
        self.units: int32 = (num_tiles - self.whole_tiles) * num_k_tiles
        self.tile: int32 = 0
        self.k_first: int32 = 0
        self.k_stop: int32 = num_k_tiles
        self.unit: int32 = 0
        self.end: int32 = 0

    def start(self, block: int32):
        """The first piece of ``block``: its first whole tile, or the start of its stream-K range."""
        self.tile = block
        self.k_first = 0
        self.k_stop = self.num_k_tiles
        # This block's contiguous share of the split tiles' (tile, K-tile) units.
        self.unit = block * self.units // self.num_sms
        self.end = (block + 1) * self.units // self.num_sms
        if self.tile >= self.whole_tiles:
            self._next_unit_piece()

    def more(self):
        """Whether the current piece exists (the walk has not run past this block's last piece)."""
        return self.tile < self.num_tiles

    def split(self):
        """Whether the current piece is part of a tile that two blocks share."""
        return self.k_first > 0 or self.k_stop < self.num_k_tiles

    def advance(self):
        """Move to the next piece: the next whole tile round-robin, else the next piece of the range."""
        if self.tile < self.whole_tiles:
            self.tile = self.tile + self.num_sms
            if self.tile >= self.whole_tiles:
                self._next_unit_piece()
        else:
            self.unit = self.unit + self.k_stop - self.k_first
            self._next_unit_piece()

    def _next_unit_piece(self):
        if self.unit < self.end:
            tile, k_first = self.fast_divmod(self.unit, self.num_k_tiles)
            self.tile = self.whole_tiles + tile
            self.k_first = k_first
            self.k_stop = k_first + self.end - self.unit
            if self.k_stop > self.num_k_tiles:
                self.k_stop = self.num_k_tiles
        else:
            self.tile = self.num_tiles  # past the last tile: the walk is over
