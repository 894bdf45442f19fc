"""The measured values a result holds besides its per-query rows: a mean with its standard
error, the cut rate, the chunks' statistics and the seconds each stage took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checking import Check, is_sha256


@dataclass(frozen=True, slots=True)
class Stat:
    """A mean over queries and its standard error."""

    value: float
    se: float

    def to_json(self) -> dict:
        return {"value": self.value, "se": self.se}

    @classmethod
    def from_json(cls, data: Any, check: Check, rate: bool = True) -> "Stat":
        check.object(data)
        check.has(data, "value", "se")
        if rate:
            check.rate(data["value"], "value")
        else:
            check.number(data["value"], "value")
        check.number(data["se"], "se")
        return cls(data["value"], data["se"])


@dataclass(frozen=True, slots=True)
class CutRate:
    """Share of table and pre blocks with a chunk boundary strictly inside them."""

    value: float
    blocks: int
    cut: int

    def to_json(self) -> dict:
        return {"value": self.value, "blocks": self.blocks, "cut": self.cut}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "CutRate":
        check.object(data)
        check.has(data, "value", "blocks", "cut")
        check.rate(data["value"], "value")
        check.count(data["blocks"], "blocks")
        check.count(data["cut"], "cut")
        check.that(data["cut"] <= data["blocks"], "cut", "is above blocks")
        return cls(data["value"], data["blocks"], data["cut"])


@dataclass(frozen=True, slots=True)
class Overlap:
    """Realised overlap between neighbouring chunks of one document."""

    boundaries: int
    zero: int
    mean: float
    max: int

    def to_json(self) -> dict:
        return {"boundaries": self.boundaries, "zero": self.zero, "mean": self.mean,
                "max": self.max}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Overlap":
        check.object(data)
        check.has(data, "boundaries", "zero", "mean", "max")
        for name in ("boundaries", "zero", "max"):
            check.count(data[name], name)
        check.number(data["mean"], "mean")
        return cls(data["boundaries"], data["zero"], data["mean"], data["max"])


@dataclass(frozen=True, slots=True)
class ChunkStats:
    """A strategy's chunks on one corpus view: count, lengths, overlap, and the sha256 of the
    whole output (equal hashes mean equal chunks, whatever the strategy's name)."""

    count: int
    mean_len: float
    max_len: int
    under_30: int
    overlap: Overlap
    hash: str | None = None

    def to_json(self) -> dict:
        out = {"count": self.count, "mean_len": self.mean_len, "max_len": self.max_len,
               "under_30": self.under_30, "overlap": self.overlap.to_json()}
        if self.hash is not None:
            out["hash"] = self.hash
        return out

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "ChunkStats":
        check.object(data)
        check.has(data, "count", "mean_len", "max_len", "under_30", "overlap")
        for name in ("count", "max_len", "under_30"):
            check.count(data[name], name)
        check.number(data["mean_len"], "mean_len")
        if data.get("hash") is not None:
            check.that(is_sha256(data["hash"]), "hash", "is not a sha256 hex digest")
        return cls(data["count"], data["mean_len"], data["max_len"], data["under_30"],
                   Overlap.from_json(data["overlap"], check.at("overlap")), data.get("hash"))


@dataclass(frozen=True, slots=True)
class Seconds:
    split: float
    index: float
    search: float

    @property
    def total(self) -> float:
        return self.split + self.index + self.search

    def to_json(self) -> dict:
        return {"split": self.split, "index": self.index, "search": self.search}

    @classmethod
    def from_json(cls, data: Any, check: Check) -> "Seconds":
        check.object(data)
        check.has(data, "split", "index", "search")
        for name in ("split", "index", "search"):
            check.number(data[name], name)
        return cls(data["split"], data["index"], data["search"])
