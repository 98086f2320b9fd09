"""The field set: problem sizes from real models' layers, none of them a sweep shape, on which V9 is judged.

C = A @ B^T with A: M x K and B: N x K. For a layer's forward pass M is the number of tokens, N the layer's output
features and K its input features. For a weight gradient (dW = dY^T X) M is the output features, N the input
features and K the number of tokens: a token count that is not a multiple of 16 puts every other operand row off
L2's 32-byte sectors (K % 16 = 8). A language-model head has the vocabulary as N; an odd vocabulary leaves C's rows
off 16-byte boundaries (N % 8 != 0), and the same head with the vocabulary padded to a multiple of 64 (as nanoGPT pads
GPT-2's) is its even-N twin.

The tile model's fitted constant (V9's CLUSTER_COST) comes from shapes with ``half == "fitted"`` and is judged on the
``"held-out"`` ones; of the fitted half's nine, seven entered the fit (the padded BERT head was not timed, and the
odd-N head was left out: tile_model.py, item 5, says why). Model dimensions are from each model's published
configuration (Hugging Face config.json).
"""

from __future__ import annotations

from dataclasses import dataclass

FITTED, HELD_OUT = "fitted", "held-out"
FORWARD, NARROW, RAGGED_K, ODD_N, PADDED_N = "forward", "narrow", "ragged K", "odd N", "padded N"


@dataclass(frozen=True)
class FieldShape:
    """One problem of the field set: where it comes from, its class and which half of the set it is in."""

    name: str  # short label for tables and charts
    source: str  # the layer and the token count it comes from
    m: int
    n: int
    k: int
    kind: str  # FORWARD, NARROW (min(M, N) <= 3600), RAGGED_K (K % 16 != 0), ODD_N (N % 8 != 0) or PADDED_N
    half: str  # FITTED or HELD_OUT

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)


# fmt: off
FIELD: tuple[FieldShape, ...] = (
    # Forward passes at a few thousand tokens.
    FieldShape("L3-8B qkv", "Llama 3 8B attention q/k/v (fused), 4096 tokens", 4096, 6144, 4096, FORWARD, FITTED),
    FieldShape("L3-8B down", "Llama 3 8B MLP down, 4096 tokens", 4096, 4096, 14336, FORWARD, HELD_OUT),
    FieldShape("L3-70B qkv", "Llama 3 70B attention q/k/v (fused), 8192 tokens", 8192, 10240, 8192, FORWARD, FITTED),
    FieldShape("L3-70B out", "Llama 3 70B attention output, 6144 tokens", 6144, 8192, 8192, FORWARD, HELD_OUT),
    FieldShape("Qwen2.5-14B up", "Qwen 2.5 14B MLP up, 4096 tokens", 4096, 13824, 5120, FORWARD, FITTED),
    FieldShape("Gemma2-9B up", "Gemma 2 9B MLP up, 8192 tokens", 8192, 14336, 3584, FORWARD, HELD_OUT),
    # Narrow problems: one side of at most 3,600.
    FieldShape("Qwen2.5-7B qkv", "Qwen 2.5 7B attention q/k/v (fused), 3000 tokens", 3000, 4608, 3584, NARROW, FITTED),
    FieldShape("Qwen2.5-7B out", "Qwen 2.5 7B attention output, 12288 tokens", 12288, 3584, 3584, NARROW, HELD_OUT),
    FieldShape("Mixtral w1", "Mixtral 8x7B expert w1, 2731 routed tokens", 2731, 14336, 4096, NARROW, FITTED),
    FieldShape("Mixtral w2", "Mixtral 8x7B expert w2, 3413 routed tokens", 3413, 4096, 14336, NARROW, HELD_OUT),
    # Weight gradients over token counts that are not multiples of 16.
    FieldShape("L3-8B out dW", "Llama 3 8B attention output, weight gradient over 5000 tokens", 4096, 4096, 5000,
               RAGGED_K, FITTED),  # fmt: skip
    FieldShape("L3-8B down dW", "Llama 3 8B MLP down, weight gradient over 3000 tokens", 4096, 14336, 3000,
               RAGGED_K, HELD_OUT),  # fmt: skip
    FieldShape("Qwen2.5-7B qkv dW", "Qwen 2.5 7B attention q/k/v, weight gradient over 6120 tokens", 4608, 3584,
               6120, RAGGED_K, FITTED),  # fmt: skip
    FieldShape("Mixtral w1 dW", "Mixtral 8x7B expert w1, weight gradient over 2728 routed tokens", 14336, 4096,
               2728, RAGGED_K, HELD_OUT),  # fmt: skip
    # Language-model heads: an odd vocabulary, and the same vocabulary padded to a multiple of 64.
    FieldShape("BERT-L head", "BERT-large masked-LM head (vocabulary 30522), 8192 tokens", 8192, 30522, 1024,
               ODD_N, FITTED),  # fmt: skip
    FieldShape("BERT-L head, padded", "the same head, vocabulary padded to 30528", 8192, 30528, 1024,
               PADDED_N, FITTED),  # fmt: skip
    FieldShape("GPT-2 XL head", "GPT-2 XL LM head (vocabulary 50257), 4096 tokens", 4096, 50257, 1600,
               ODD_N, HELD_OUT),  # fmt: skip
    FieldShape("GPT-2 XL head, padded", "the same head, vocabulary padded to 50304 (as nanoGPT pads it)", 4096,
               50304, 1600, PADDED_N, HELD_OUT),  # fmt: skip
)
# fmt: on


def by_shape() -> dict[tuple[int, int, int], FieldShape]:
    """The field set keyed by (M, N, K)."""
    return {f.shape: f for f in FIELD}


def half(name: str) -> tuple[FieldShape, ...]:
    """The shapes of one half (FITTED or HELD_OUT)."""
    if name not in (FITTED, HELD_OUT):
        raise ValueError(f"half must be {FITTED!r} or {HELD_OUT!r}, got {name!r}")
    return tuple(f for f in FIELD if f.half == name)


def padded_twin(shape: FieldShape) -> FieldShape | None:
    """An odd-N head's even-N twin (the same M and K, N padded), or None for any other shape."""
    if shape.kind != ODD_N:
        return None
    return next((f for f in FIELD if f.kind == PADDED_N and (f.m, f.k) == (shape.m, shape.k)), None)
