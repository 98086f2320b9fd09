"""Frozen dataclasses read from and written to JSON: the kinds a value may be, how a key is declared (its kind,
whether it may be null or absent), and the one generic decoder and encoder :mod:`matmul_data.model` builds on.

A decoded object keeps the order of its keys, so ``to_json()`` gives back the dict it was read from, key for key; a key
that is not declared is refused. Errors are :class:`ResultsError`, naming the dotted path of the field.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Self

# A configuration: parameter -> value, as the implementation takes it ({} for library calls; a peer's may nest).
Config = dict[str, Any]


class ResultsError(ValueError):
    """A results file is missing, unreadable or does not follow the schema; the message says which and why."""


def invalid(field: str, problem: str, value: Any) -> ResultsError:
    """The error for a field whose value breaks a rule: its dotted path, the rule, and (the start of) the value."""
    shown = repr(value)
    return ResultsError(f"field {field!r} {problem}, got {shown if len(shown) <= 80 else shown[:77] + '...'}")


def missing(field: str) -> ResultsError:
    """The error for a key that must be present and is not."""
    return ResultsError(f"field {field!r} is missing")


# --- kinds: what a value may be, and what the error says when it is not -------------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    """A rule for a field's value (checked on the JSON value, before it is decoded)."""

    holds: Callable[[Any], bool]
    problem: str


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


TEXT = Kind(lambda v: isinstance(v, str) and bool(v), "must be a non-empty string")
COUNT = Kind(lambda v: _is_int(v, 1), "must be an integer >= 1")
COUNT0 = Kind(lambda v: _is_int(v, 0), "must be an integer >= 0")
POSITIVE = Kind(lambda v: _is_number(v) and v > 0, "must be a positive number")
NUMBER = Kind(_is_number, "must be a finite number")
NONNEGATIVE = Kind(lambda v: _is_number(v) and v >= 0, "must be a finite number >= 0 or null")
FLAG = Kind(lambda v: isinstance(v, bool), "must be true or false")
DATE = Kind(lambda v: isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) is not None,
            "must be a date YYYY-MM-DD")  # fmt: skip
PAIR = Kind(lambda v: isinstance(v, list) and len(v) == 2 and all(_is_int(x, 1) for x in v),
            "must be two positive integers")  # fmt: skip
# calls per round (method 3 and older), or what the warm-up is (method 4, with warmup_s its seconds)
WARMUP = Kind(lambda v: _is_int(v, 0) or TEXT.holds(v), "must be an integer >= 0 or a non-empty string")
LIST = Kind(lambda v: isinstance(v, list), "must be a list (possibly empty)")
RUNS = Kind(lambda v: isinstance(v, list) and bool(v), "must be a non-empty list of the runs merged")
EDITS = Kind(
    lambda v: (
        isinstance(v, list)
        and all(isinstance(e, list) and len(e) == 2 and all(isinstance(s, str) for s in e) and e[0] for e in v)
    ),
    "must be a list of [old text, new text] (old not empty)",
)


def key(kind: Kind | None = None, *, null: bool = False, absent: bool = False, default: Any = None) -> Any:
    """A declared key: its kind, whether it may be null, whether it may be absent (its value is then ``default``)."""
    meta = {"kind": kind, "null": null, "absent": absent}
    if absent:
        return dataclasses.field(default=default, metadata=meta)
    return dataclasses.field(metadata=meta)


def optional(kind: Kind | None = None, default: Any = None) -> Any:
    """A key that may be null or absent (None either way)."""
    return key(kind, null=True, absent=True, default=default)


# --- the generic decoder and encoder ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Spec:
    type: Any
    kind: Kind | None
    null: bool
    absent: bool
    default: Any


def _path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


@dataclasses.dataclass(frozen=True, kw_only=True)
class Model:
    """An object of the results file; ``key_order`` is the order of the keys it was read with (empty: made in code)."""

    key_order: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> Self:
        """Decode one object of the file (``where``: its dotted path, for errors); ResultsError names the bad field."""
        if not isinstance(data, dict):
            raise invalid(where or "(top level)", "must be an object", data)
        specs = _specs(cls)
        values = {}
        for name, spec in specs.items():
            field = _path(where, name)
            if name not in data:
                if not spec.absent:
                    raise missing(field)
                continue
            value = data[name]
            if value is None:
                if not spec.null:
                    raise invalid(field, spec.kind.problem if spec.kind else "must not be null", value)
            elif spec.kind is not None and not spec.kind.holds(value):
                raise invalid(field, spec.kind.problem, value)
            values[name] = None if value is None else _decode(spec.type, value, field)
        unknown = next((name for name in data if name not in specs), None)
        if unknown is not None:
            raise invalid(_path(where, unknown), f"is not a key of {cls.__name__} (matmul_data.model)", data[unknown])
        return cls(key_order=tuple(data), **values)

    @classmethod
    def of(cls, /, **values: Any) -> Self:  # positional-only: a model may have a key "cls"
        """An object made in code that writes exactly the keys given (a null one too), in the order given."""
        return cls(key_order=tuple(values), **values)

    def keys(self) -> list[str]:
        """The keys it writes: those it was read or made with, in their order, then any set since."""
        specs = _specs(type(self))
        names = [*self.key_order]
        return names + [n for n, s in specs.items()
                        if n not in names and not (s.absent and getattr(self, n) == s.default)]  # fmt: skip

    def has(self, name: str) -> bool:
        """Whether it writes the key ``name`` (as a dict holds a key, null or not)."""
        return name in self.keys()

    def put(self, **changes: Any) -> Self:
        """A copy with these values: a key it writes keeps its place, a new one goes last (as in a dict)."""
        names = self.keys()
        return dataclasses.replace(self, key_order=(*names, *(n for n in changes if n not in names)), **changes)

    def to_json(self) -> dict[str, Any]:
        """The object as the file holds it: the keys it was read with, in their order, then any set since."""
        return {name: _encode(getattr(self, name)) for name in self.keys()}


@functools.cache
def _specs(cls: type[Model]) -> dict[str, _Spec]:
    """The declared keys of a model class, with their types resolved (the annotations are strings)."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: _Spec(hints[f.name], f.metadata.get("kind"), f.metadata["null"], f.metadata["absent"], f.default)
        for f in dataclasses.fields(cls)
        if "null" in f.metadata
    }


_SCALARS = {
    float: (_is_number, "must be a finite number"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "must be an integer"),
    str: (lambda v: isinstance(v, str), "must be a string"),
    bool: (lambda v: isinstance(v, bool), "must be true or false"),
}


def _decode(tp: Any, value: Any, where: str) -> Any:
    """A JSON value as the declared type: objects as models, lists as tuples, maps as dicts, scalars as they are."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:  # free-form JSON, kept as it is (a copy: the model shares nothing with its input)
        return copy.deepcopy(value)
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_json(value, where)
    if origin is dict:
        if not isinstance(value, dict):
            raise invalid(where, "must be an object", value)
        return {name: _decode(args[1], item, _path(where, name)) for name, item in value.items()}
    if origin is tuple:
        if not isinstance(value, list) or (args[-1] is not Ellipsis and len(value) != len(args)):
            raise invalid(where, "must be a list", value)
        each = [args[0]] * len(value) if args[-1] is Ellipsis else args
        return tuple(_decode(t, item, f"{where}[{i}]") for i, (t, item) in enumerate(zip(each, value, strict=True)))
    options = [a for a in args if a is not type(None)] if origin in (typing.Union, types.UnionType) else [tp]
    if value is None and len(options) < len(args):  # a null item of a list or map whose items may be null
        return None
    if len(options) == 1 and options[0] not in _SCALARS:  # an optional model, list or map
        return _decode(options[0], value, where)
    if any(_SCALARS[t][0](value) for t in options):
        return value
    raise invalid(where, " or ".join(_SCALARS[t][1] for t in options), value)


def _encode(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_json()
    if isinstance(value, dict):
        return {name: _encode(item) for name, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(item) for item in value]
    return value
