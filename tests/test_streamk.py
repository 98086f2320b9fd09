"""The stream-K schedule's model (experiments/streamk.py): every K-tile once, each split tile shared by
two consecutive blocks in the order the fix-up relies on, equal shares, and no split where none is needed."""

from __future__ import annotations

from collections import Counter

import pytest

from matmul_bench.kernels import load

streamk = load("streamk")


# (tiles, K-tiles per tile, SMs): the recorded shapes with 128 x 256 tiles on 132 SMs, and edge cases.
CASES = [
    (2048, 128, 132),  # 8192^3: 15 x 132 + 68
    (512, 64, 132),  # 4096^3: 3 x 132 + 116
    (4096, 16, 132),  # 16384 x 8192 x 1024: 31 x 132 + 4
    (144, 2, 132),  # every tile split, two K-tiles each
    (561, 1, 132),  # one K-tile per tile: no tile can be cut
    (133, 3, 132),
    (264, 5, 132),  # a multiple of the SM count: nothing split
    (96, 9, 132),  # fewer tiles than SMs: nothing split
]


def all_pieces(tiles: int, k_tiles: int, sms: int) -> list[list[streamk.Piece]]:
    return [streamk.pieces(b, tiles, k_tiles, sms) for b in range(sms)]


@pytest.mark.parametrize("tiles, k_tiles, sms", CASES)
def test_every_k_tile_of_every_tile_is_computed_exactly_once(tiles: int, k_tiles: int, sms: int) -> None:
    seen = Counter((p.tile, k) for share in all_pieces(tiles, k_tiles, sms) for p in share
                   for k in range(p.k_first, p.k_stop))  # fmt: skip
    assert seen == Counter({(t, k): 1 for t in range(tiles) for k in range(k_tiles)})


@pytest.mark.parametrize("tiles, k_tiles, sms", CASES)
def test_a_split_tile_is_shared_by_consecutive_blocks_last_k_tiles_first(tiles: int, k_tiles: int, sms: int) -> None:
    shares = all_pieces(tiles, k_tiles, sms)
    lasts, firsts = [], []  # the pieces of split tiles: their last K-tiles and their first
    for block, share in enumerate(shares):
        for i, piece in enumerate(share):
            if piece.k_first > 0:  # the tile's last K-tiles: the first piece of this block's stream-K range
                assert piece.k_stop == k_tiles and piece.tile >= tiles - streamk.stream_k_tiles(tiles, sms)
                assert i == 0 or share[i - 1].tile < tiles - streamk.stream_k_tiles(tiles, sms)
                lasts.append(piece.tile)
            elif piece.k_stop < k_tiles:  # its first K-tiles: this block's last piece, finished by block + 1
                assert i == len(share) - 1
                later = [p for p in shares[block + 1] if p.tile == piece.tile]
                assert later == [streamk.Piece(piece.tile, piece.k_stop, k_tiles)]
                firsts.append(piece.tile)
    # Every split tile is cut once, into those two pieces.
    assert sorted(firsts) == sorted(lasts) == sorted(set(lasts))
    # Some tile is split exactly when the model hands tiles to stream-K and a tile has two K-tiles to cut between:
    # each block's range is then more than one tile and less than two, so the first block's range ends inside a
    # tile or the last block's starts inside one.
    assert bool(lasts) == (streamk.stream_k_tiles(tiles, sms) > 0 and k_tiles > 1), (len(lasts), "split tiles")


@pytest.mark.parametrize("tiles, k_tiles, sms", CASES)
def test_blocks_get_equal_work_when_the_tail_is_split(tiles: int, k_tiles: int, sms: int) -> None:
    work = [sum(p.k_stop - p.k_first for p in share) for share in all_pieces(tiles, k_tiles, sms)]
    if streamk.stream_k_tiles(tiles, sms):
        assert max(work) - min(work) <= 1
    assert sum(work) == tiles * k_tiles


def test_only_a_partial_last_wave_is_split_with_one_full_wave_before_it() -> None:
    assert streamk.stream_k_tiles(2048, 132) == 132 + 68
    assert streamk.stream_k_tiles(264, 132) == 0  # whole waves
    assert streamk.stream_k_tiles(96, 132) == 0  # less than one wave: nothing to balance against
    with pytest.raises(ValueError, match="positive"):
        streamk.stream_k_tiles(0, 132)
    with pytest.raises(ValueError, match="outside the persistent grid"):
        streamk.pieces(132, 2048, 128, 132)
