"""Checking a JSON document read back (results.json, a baseline file) once, where it is read:
the first thing wrong raises InputError naming the file and the field, so the stages that use
the document never check again. And the way back for a plain record: `Fields.to_json`."""

from __future__ import annotations

import math
import re
from dataclasses import fields
from typing import Any

from .errors import InputError


class Check:
    """Raises InputError(where, "<path>.<field> ...") on the first thing wrong."""

    def __init__(self, where: str, path: str = ""):
        self.where, self.path = where, path

    def at(self, part: str | int) -> "Check":
        sub = f"[{part}]" if isinstance(part, int) else (f".{part}" if self.path else part)
        return Check(self.where, self.path + sub)

    def fail(self, name: str | None, problem: str):
        field_ = self.path if name is None else (f"{self.path}.{name}" if self.path else name)
        raise InputError(self.where, f"{field_} {problem}" if field_ else problem)

    def that(self, ok: bool, name: str | None, problem: str) -> None:
        if not ok:
            self.fail(name, problem)

    def object(self, data: Any, name: str | None = None) -> None:
        self.that(isinstance(data, dict), name, "is missing or not an object")

    def has(self, data: Any, *keys: str) -> None:
        """`data` is an object holding every one of `keys`."""
        self.object(data)
        for k in keys:
            self.that(k in data, k, "is missing")

    # The messages below are made only for a value that fails: a results.json holds some
    # hundred thousand values, and formatting each one's message cost more than its check.
    def string(self, value: Any, name: str, empty: bool = False) -> None:
        if not (isinstance(value, str) and (empty or bool(value))):
            self.fail(name, f"is {value!r}, not a string")

    def count(self, value: Any, name: str, least: int = 0) -> None:
        if not (type(value) is int and value >= least):
            self.fail(name, f"is {value!r}, not a whole number >= {least}")

    def number(self, value: Any, name: str, least: float | None = 0.0) -> None:
        if not (finite(value) and (least is None or value >= least)):
            self.fail(name, f"is {value!r}, not a finite number"
                      + (f" >= {least:g}" if least is not None else ""))

    def rate(self, value: Any, name: str) -> None:
        if not is_rate(value):
            self.fail(name, f"is {value!r}, not a number in [0, 1]")


class Fields:
    """A dataclass whose JSON is its fields in the order they are declared (the key order
    results.json and the baselines keep), a field that has a `to_json` as that, and a field
    named in `OMIT_NONE` left out while it is None."""

    __slots__ = ()
    OMIT_NONE: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_NONE:
                continue
            out[f.name] = value.to_json() if isinstance(value, Fields) else value
        return out

    @classmethod
    def from_json(cls, data: Any, check: Check) -> Any:
        """The record from JSON holding each field checked by its declared type: int a whole
        number >= 0, float a finite number >= 0, str a non-empty string. A record whose
        fields need more than that checks them in a from_json of its own."""
        check.has(data, *(f.name for f in fields(cls)))
        for f in fields(cls):
            _BY_TYPE[f.type](check, data[f.name], f.name)
        return cls(**{f.name: data[f.name] for f in fields(cls)})


# Field types are the annotations' text: the modules use `from __future__ import annotations`.
_BY_TYPE = {"int": Check.count, "float": Check.number, "str": Check.string}


def finite(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def is_rate(x: Any) -> bool:
    return finite(x) and 0 <= x <= 1


def is_sha256(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None
