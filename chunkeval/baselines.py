"""Baselines: what a real run measured, kept per query so a new run can be tested against it.

File `baselines/<corpus name>.json`. A verdict is a paired test of the new per-query values
against the recorded ones: a metric regressed only when the bootstrap interval of the mean
difference lies wholly below zero *and* the drop is at least `min_effect`. The same bounds
upward mark an improvement, which is reported, never failed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cache import atomic_write
from .model import InputError
from .stats import paired_bootstrap

SCHEMA = 1
DECIMALS = 4
# The settings that change what a number means: a baseline made under others is not comparable.
COMPARED_SETTINGS = ("k", "budget", "shingle", "complete_at", "max_queries", "seed")
# metric -> the per-query series it is the mean of
METRICS = {"recall_at_k": "coverage", "budget_recall": "budget_coverage",
           "complete_rate": "complete", "doc_hit_at_k": "doc_hit",
           "mrr_at_k": "rr", "ndcg_at_k": "ndcg"}
# Gated by default: the seed's four metrics, under one family-wise bound (Tolerance.confidence).
# The rank metrics are reported only. Why these: README, "How much to trust the gate".
GATED = ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k")


@dataclass(frozen=True)
class Tolerance:
    min_effect: float = 0.02  # a real regression is also a big enough one (2 points)
    alpha: float = 0.05  # chance that a harmless change fails any of a strategy's comparisons
    family: int = 1  # how many comparisons of one strategy are gated in the session
    gated: tuple[str, ...] = GATED
    resamples: int = 4000
    seed: int = 0
    cut_slack: float = 0.01  # cut rate is deterministic; allow rounding only
    cut_ceiling: float = 0.25

    @property
    def confidence(self) -> float:
        """Two-sided confidence of each interval: Bonferroni over the strategy's family, so
        that one-sided, P(any harmless comparison falls wholly below 0) <= alpha."""
        return 1 - 2 * self.alpha / max(1, self.family)


@dataclass(frozen=True)
class Verdict:
    metric: str
    baseline: float
    value: float
    diff: float
    low: float
    high: float
    status: str  # "ok", "regressed", "improved"
    gated: bool = True
    confidence: float = 0.95

    def describe(self) -> str:
        return (f"{self.metric}: {self.value:.4f} vs baseline {self.baseline:.4f} "
                f"(diff {self.diff:+.4f}, {self._ci}) -> {self.status}")

    @property
    def _ci(self) -> str:
        return f"{self.confidence:.2%} CI {self.low:+.4f} to {self.high:+.4f}"

    def to_json(self) -> dict:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def key(strategy: str, retriever: str, query_set: str) -> str:
    return f"{strategy}|{retriever}|{query_set}"


def first_span(q: dict) -> str | None:
    """The first retrieved chunk's span as "doc:start:end", for per-query diffs."""
    r = q.get("retrieved")
    return f"{r[0][0]}:{r[0][1]}:{r[0][2]}" if r else None


def series(result: dict, complete_at: float) -> dict[str, np.ndarray]:
    """The per-query series of a result entry, rounded as a baseline stores them."""
    pq = result["per_query"]
    cov = np.round([q["coverage"] for q in pq], DECIMALS)
    out = {"coverage": cov,
           "budget_coverage": np.round([q["budget_coverage"] for q in pq], DECIMALS),
           "complete": (cov >= complete_at).astype(float),
           "doc_hit": np.array([float(q["doc_hit"]) for q in pq])}
    for name in ("rr", "ndcg"):
        if pq and all(name in q for q in pq):
            out[name] = np.round([q[name] for q in pq], DECIMALS)
    return out


def entry_from_result(result: dict, complete_at: float) -> dict:
    s = series(result, complete_at)
    per_query = {"coverage": s["coverage"].tolist(),
                 "budget_coverage": s["budget_coverage"].tolist(),
                 "doc_hit": s["doc_hit"].astype(int).tolist()}
    per_query |= {n: s[n].tolist() for n in ("rr", "ndcg") if n in s}
    if all("first" in q or "retrieved" in q for q in result["per_query"]):
        per_query["first"] = [q.get("first") or first_span(q) for q in result["per_query"]]
    return {
        "metrics": {m: round(float(s[src].mean()), DECIMALS) if len(s[src]) else 0.0
                    for m, src in METRICS.items() if src in s},
        "cut_rate": round(float(result["metrics"]["cut_rate"]["value"]), DECIMALS),
        "chunks": result["chunks"]["count"],
        "per_query": per_query,
    }


def compare(result: dict, entry: dict, complete_at: float, tol: Tolerance) -> list[Verdict]:
    """One verdict per metric both sides have; only gated metrics can regress."""
    new = series(result, complete_at)
    pq = entry["per_query"]
    old_cov = np.asarray(pq["coverage"], dtype=float)
    old = {"coverage": old_cov, "budget_coverage": np.asarray(pq["budget_coverage"], dtype=float),
           "complete": (old_cov >= complete_at).astype(float),
           "doc_hit": np.asarray(pq["doc_hit"], dtype=float)}
    old |= {n: np.asarray(pq[n], dtype=float) for n in ("rr", "ndcg") if n in pq}
    verdicts = []
    for metric, src in METRICS.items():
        if src not in new or src not in old:
            continue
        a, b = new[src], old[src]
        if a.shape != b.shape:
            raise ValueError(f"{metric}: {len(a)} queries now, {len(b)} in the baseline")
        if not len(a):
            continue
        ci = paired_bootstrap(a, b, resamples=tol.resamples, seed=tol.seed,
                              confidence=tol.confidence)
        gated = metric in tol.gated
        status = "ok"
        if gated and ci.high < 0 and ci.diff <= -tol.min_effect:
            status = "regressed"
        elif ci.low > 0 and ci.diff >= tol.min_effect:
            status = "improved"
        verdicts.append(Verdict(metric, float(b.mean()), float(a.mean()), float(ci.diff),
                                float(ci.low), float(ci.high), status, gated, tol.confidence))
    return verdicts


class BaselineError(Exception):
    """The baseline cannot be compared with this run; the message says how to fix that."""


class Baseline:
    def __init__(self, path: Path, data: dict | None = None):
        self.path = Path(path)
        self.data = data or {"schema": SCHEMA, "corpus": {}, "settings": {},
                             "query_sets": {}, "entries": {}}

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """The file's baseline, or an empty one when there is no file yet."""
        path = Path(path)
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(str(path), f"not a valid baseline file ({e}); fix it or "
                             "re-create it with `pytest --update-baselines`") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or "entries" not in data:
            raise InputError(str(path), f"not a chunkeval baseline of schema {SCHEMA}; "
                             "re-create it with `pytest --update-baselines`")
        return cls(path, data)

    @property
    def exists(self) -> bool:
        return bool(self.data["entries"])

    def entry(self, strategy: str, retriever: str, query_set: str) -> dict | None:
        return self.data["entries"].get(key(strategy, retriever, query_set))

    def check_comparable(self, corpus: dict, settings: dict, query_set: str,
                         query_set_fingerprint: str) -> None:
        """Raise BaselineError when this baseline measured something else."""
        how = "If the change is intended, re-baseline with `pytest --update-baselines`."
        rec = self.data["corpus"]
        if rec.get("fingerprint") != corpus["fingerprint"]:
            raise BaselineError(
                f"{self.path}: recorded on corpus {rec.get('name')!r} fingerprint "
                f"{rec.get('fingerprint')}, this run's corpus has {corpus['fingerprint']}: "
                f"the corpus changed, so the numbers are not comparable. {how}")
        for name in COMPARED_SETTINGS:
            if name in self.data["settings"] and self.data["settings"][name] != settings.get(name):
                raise BaselineError(
                    f"{self.path}: recorded with {name}={self.data['settings'][name]}, this run "
                    f"uses {name}={settings.get(name)}. {how}")
        qs = self.data["query_sets"].get(query_set)
        if qs is not None and qs.get("fingerprint") != query_set_fingerprint:
            raise BaselineError(
                f"{self.path}: query set {query_set!r} changed (fingerprint "
                f"{qs.get('fingerprint')} recorded, {query_set_fingerprint} now). {how}")

    def record(self, corpus: dict, settings: dict, query_sets: dict, result: dict) -> None:
        """Record one result. Entries measured on another corpus, under other settings or
        on another version of a query set are dropped: kept, they would later be compared
        against queries they were not measured on."""
        compared = {k: settings[k] for k in COMPARED_SETTINGS if k in settings}
        if (self.data["corpus"].get("fingerprint") not in (None, corpus["fingerprint"])
                or self.data["settings"] not in ({}, compared)):
            self.data["entries"], self.data["query_sets"] = {}, {}
        for name, qs in query_sets.items():
            old = self.data["query_sets"].get(name)
            if old is not None and old != qs:
                self.data["entries"] = {k: v for k, v in self.data["entries"].items()
                                        if k.split("|")[2] != name}
        self.data["corpus"] = {"name": corpus["name"], "fingerprint": corpus["fingerprint"]}
        self.data["settings"] = compared
        self.data["query_sets"].update(query_sets)
        self.data["entries"][key(result["strategy"], result["retriever"], result["query_set"])] = \
            entry_from_result(result, settings["complete_at"])

    def stale(self, known_strategies: set[str]) -> list[str]:
        return sorted(k for k in self.data["entries"] if k.split("|")[0] not in known_strategies)

    def save(self) -> Path:
        return atomic_write(self.path, dumps(self.data))


_SCALAR_LIST = re.compile(r"\[[^\[\]{}]*\]")


def dumps(data: dict) -> str:
    """Stable JSON for review: sorted keys, one key a line, each list of scalars on one line."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)
    return _SCALAR_LIST.sub(lambda m: re.sub(r"\n\s*", " ", m.group(0)).replace("[ ", "[")
                            .replace(" ]", "]"), text) + "\n"
