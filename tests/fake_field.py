"""A made-up field section (the results file's "field": V8, V9, cuBLAS and two peers at every shape of
matmul_data.field), for the site's tests: every derived number follows from made-up samples, as in fake_results.py.
Nothing here was measured."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from fake_results import LADDER_CONFIGS, fake_run, figure
from matmul_data import field, results, versions

# Made-up speeds against cuBLAS: V9 quicker than V8 at a ragged K, both slower there; a peer at half the shapes.
RAGGED = {"v8": 1.30, "v9": 1.05}
ELSEWHERE = {"v8": 1.01, "v9": 1.00}


@cache
def _fake_field() -> tuple[dict[str, Any], ...]:
    """A figure of V8, V9 and cuBLAS per shape, then, at some shapes, one more where the peers ran too (record
    --peers: a rotation of its own, kept beside the other)."""
    figures, with_peers = [], []
    ours = versions.names()[-2:]
    titles = {name: versions.title(name) for name in ours}
    for index, shape in enumerate(field.FIELD):
        scale = shape.m * shape.n * shape.k / 8192**3
        slower = RAGGED if shape.kind == field.RAGGED_K else ELSEWHERE
        latencies = {impl: 1.47 * scale * slower.get(impl, 1.0) for impl in ours} | {"cublas": 1.47 * scale}
        peers = {versions.TRITON: 1.47 * scale * 1.08} if index % 2 == 0 else {}
        peers |= {versions.QUACK: 1.47 * scale * 0.98} if index % 3 == 0 else {}
        about = {"name": shape.name, "source": shape.source, "kind": shape.kind, "half": shape.half}
        for timed, into in ((latencies, figures), (latencies | peers, with_peers) if peers else (None, None)):
            if timed is None or into is None:
                continue
            found = figure(fake_run(shape.shape, timed, configs=LADDER_CONFIGS, titles=titles, rounds=6))
            found["field"] = found["runs"][0]["field"] = about
            if shape.kind == field.ODD_N:  # cuBLAS misses the tolerance where C's rows are off 16 bytes
                found["rows"]["cublas"]["wrong_elements"] = found["runs"][0]["rows"]["cublas"]["wrong_elements"] = 96
            into.append(found)
    return (*figures, *with_peers)


def fake_field() -> list[dict[str, Any]]:
    """One figure per shape of the field set, in its order, then the peers' figures (a fresh copy)."""
    return copy.deepcopy(list(_fake_field()))


def with_field(data: dict[str, Any]) -> dict[str, Any]:
    """A results file with the made-up field section added, validated."""
    data = data | {"field": fake_field()}
    results.validate(data)
    return data
