"""Checking a JSON document read back (results.json, a baseline file) once, where it is read:
the first thing wrong raises InputError naming the file and the field, so the stages that use
the document never check again."""

from __future__ import annotations

import math
import re
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

    def has(self, data: dict, *keys: str) -> None:
        for k in keys:
            self.that(k in data, k, "is missing")

    def string(self, value: Any, name: str, empty: bool = False) -> None:
        self.that(isinstance(value, str) and (empty or bool(value)), name,
                  f"is {value!r}, not a string")

    def count(self, value: Any, name: str, least: int = 0) -> None:
        self.that(type(value) is int and value >= least, name,
                  f"is {value!r}, not a whole number >= {least}")

    def number(self, value: Any, name: str, least: float | None = 0.0) -> None:
        self.that(finite(value) and (least is None or value >= least), name,
                  f"is {value!r}, not a finite number" + (f" >= {least:g}" if least is not None
                                                          else ""))

    def rate(self, value: Any, name: str) -> None:
        self.that(is_rate(value), name, f"is {value!r}, not a number in [0, 1]")


def finite(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def is_rate(x: Any) -> bool:
    return finite(x) and 0 <= x <= 1


def is_sha256(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None
