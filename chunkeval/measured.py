"""The measured values a result holds besides its per-query rows: a mean with its standard
error, the cut rate, the chunks' statistics and the seconds each stage took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checking import Check, Fields, is_sha256


@dataclass(frozen=True, slots=True)
class Stat(Fields):
    """A mean over queries and its standard error."""

    value: float
    se: float

    @classmethod
    def from_json(cls, data: Any, check: Check, rate: bool = True) -> "Stat":
        check.has(data, "value", "se")
        if rate:
            check.rate(data["value"], "value")
        else:
            check.number(data["value"], "value")
        check.number(data["se"], "se")
        return cls(data["value"], data["se"])


@dataclass(frozen=True, slots=True)
class CutRate(Fields):
    """Share of table and pre blocks with a chunk boundary strictly inside them."""

    value: float
    blocks: int
    cut: int

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "CutRate":
        check.has(data, "value", "blocks", "cut")
        check.rate(data["value"], "value")
        check.count(data["blocks"], "blocks")
        check.count(data["cut"], "cut")
        check.that(data["cut"] <= data["blocks"], "cut", "is above blocks")
        return cls(data["value"], data["blocks"], data["cut"])


@dataclass(frozen=True, slots=True)
class Overlap(Fields):
    """Realised overlap between neighbouring chunks of one document."""

    boundaries: int
    zero: int
    mean: float
    max: int


@dataclass(frozen=True, slots=True)
class ChunkStats(Fields):
    """A strategy's chunks on one corpus view: count, lengths, overlap, and the sha256 of the
    whole output (equal hashes mean equal chunks, whatever the strategy's name)."""

    count: int
    mean_len: float
    max_len: int
    under_30: int
    overlap: Overlap
    hash: str | None = None

    OMIT_NONE = ("hash",)

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "ChunkStats":
        check.has(data, "count", "mean_len", "max_len", "under_30", "overlap")
        for name in ("count", "max_len", "under_30"):
            check.count(data[name], name)
        check.number(data["mean_len"], "mean_len")
        if data.get("hash") is not None:
            check.that(is_sha256(data["hash"]), "hash", "is not a sha256 hex digest")
        return cls(data["count"], data["mean_len"], data["max_len"], data["under_30"],
                   Overlap.from_json(data["overlap"], check.at("overlap")), data.get("hash"))


@dataclass(frozen=True, slots=True)
class Seconds(Fields):
    split: float
    index: float
    search: float

    @property
    def total(self) -> float:
        return self.split + self.index + self.search
