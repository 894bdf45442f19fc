"""Baselines: what a real run measured, kept per query so a new run can be tested against it.

File `baselines/<corpus name>.json` (see baseline_path); the file records which corpus it
was made on (its identity: the built-in name, or the directory), and an update refuses a file
made on another corpus. Updates run through update_file: under a lock on the directory, the
file is read, validated, merged with this run's entries and renamed into place, so that
concurrent updates keep every entry. A verdict is a paired test of the new per-query values
against the recorded ones: a metric regressed only when the bootstrap interval of the mean
difference lies wholly below zero *and* the drop is at least `min_effect`. The same bounds
upward mark an improvement, which is reported, never failed.

An entry may carry a calibrated noise floor (`chunkeval calibrate STRATEGY --record`): per
metric, the mean and spread of the differences that harmless variants of the strategy (its
boundaries shifted) made against this very entry. Then the verdict asks two questions: does
the drop exceed what re-chunking noise explains (a prediction bound from those variants, at
the family-wise level) and what query sampling explains (a 95% paired bootstrap)? The
bootstrap alone answers the second question only, and is about twice as wide as the first
needs on the default corpus (README, "How much to trust the gate").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cache import atomic_write
from .config import BUILTIN_CORPORA
from .model import InputError
from .stats import paired_bootstrap

SCHEMA = 1
DECIMALS = 4
# The settings that change what a number means: a baseline made under others is not comparable.
COMPARED_SETTINGS = ("k", "budget", "shingle", "complete_at", "max_queries", "seed", "length")
# What a baseline recorded before a setting existed measured.
_RECORDED_BEFORE = {"length": "chars"}
# metric -> the per-query series it is the mean of
METRICS = {"recall_at_k": "coverage", "budget_recall": "budget_coverage",
           "complete_rate": "complete", "doc_hit_at_k": "doc_hit",
           "mrr_at_k": "rr", "ndcg_at_k": "ndcg"}
# Gated by default: the seed's four metrics, under one family-wise bound (Tolerance.confidence).
# The rank metrics are reported only. Why these: README, "How much to trust the gate".
GATED = ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k")
# --update-baselines=MODE: every selected entry; only the selected entries that fail, changed
# their chunks or are missing; or every selected entry, replacing an unreadable file.
UPDATE_MODES = ("all", "failing", "replace")
# With a calibrated noise floor, the query-sampling interval is a plain 95% one: the floor
# already carries the family-wise bound.
NOISE_CONFIDENCE = 0.95
MIN_NOISE_TRIALS = 3
LOCK_TIMEOUT = 600  # seconds to wait for another run's update of the same file



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

    def noise_margin(self, noise: dict) -> float:
        """Half-width of the prediction interval of one more harmless difference, one-sided
        at alpha / family, from a noise floor {"offset", "sd", "trials"} (Student's t)."""
        from scipy.stats import t
        j = noise["trials"]
        q = float(t.ppf(1 - self.alpha / max(1, self.family), j - 1))
        return q * noise["sd"] * math.sqrt(1 + 1 / j)


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
    # with a calibrated noise floor: the range of differences harmless variants make
    harmless: tuple[float, float] | None = None

    def describe(self) -> str:
        """In points, as the summary table shows them."""
        floor = ("" if self.harmless is None else
                 f"; harmless variants {self.harmless[0] * 100:+.1f} to "
                 f"{self.harmless[1] * 100:+.1f}")
        return (f"{self.metric}: {self.value * 100:.1f}% vs baseline {self.baseline * 100:.1f}% "
                f"(diff {self.diff * 100:+.1f} points, {self.confidence:.1%} CI "
                f"{self.low * 100:+.1f} to {self.high * 100:+.1f}{floor}) -> {self.status}")

    def to_json(self) -> dict:
        out = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}
        if self.harmless is None:
            del out["harmless"]
        else:
            out["harmless"] = [round(v, 6) for v in self.harmless]
        return out


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


# What a retriever's numbers depend on besides the chunks: recorded per entry, and an entry
# made under other values is not compared.
RETRIEVER_FIELDS = ("retriever_version", "analyzer")


def check_same_retriever(result: dict, entry: dict, where: str) -> None:
    """Raise BaselineError when the entry was measured with another retriever version or
    analyzer (entries recorded before these were kept pass)."""
    for name in RETRIEVER_FIELDS:
        if name in entry and name in result and entry[name] != result[name]:
            raise BaselineError(
                f"{where}: retriever {result['retriever']!r} was recorded with {name} "
                f"{entry[name]!r}, this run has {result[name]!r}; numbers from another "
                f"{name.replace('_', ' ')} are not compared. If the change is intended, "
                f"re-baseline with `pytest --update-baselines`.")


def entry_from_result(result: dict, complete_at: float) -> dict:
    s = series(result, complete_at)
    per_query = {"coverage": s["coverage"].tolist(),
                 "budget_coverage": s["budget_coverage"].tolist(),
                 "doc_hit": s["doc_hit"].astype(int).tolist()}
    per_query |= {n: s[n].tolist() for n in ("rr", "ndcg") if n in s}
    if all("first" in q or "retrieved" in q for q in result["per_query"]):
        per_query["first"] = [q.get("first") or first_span(q) for q in result["per_query"]]
    return {k: result[k] for k in RETRIEVER_FIELDS if k in result} | {
        "metrics": {m: round(float(s[src].mean()), DECIMALS) if len(s[src]) else 0.0
                    for m, src in METRICS.items() if src in s},
        "cut_rate": round(float(result["metrics"]["cut_rate"]["value"]), DECIMALS),
        "chunks": result["chunks"]["count"],
        **({"chunks_hash": result["chunks"]["hash"]} if result["chunks"].get("hash") else {}),
        **({"params": result["params"]} if result.get("params") is not None else {}),
        "per_query": per_query,
    }


def entry_series(entry: dict, complete_at: float) -> dict[str, np.ndarray]:
    """The per-query series a baseline entry recorded, as `series` gives a result's."""
    pq = entry["per_query"]
    cov = np.asarray(pq["coverage"], dtype=float)
    out = {"coverage": cov, "budget_coverage": np.asarray(pq["budget_coverage"], dtype=float),
           "complete": (cov >= complete_at).astype(float),
           "doc_hit": np.asarray(pq["doc_hit"], dtype=float)}
    return out | {n: np.asarray(pq[n], dtype=float) for n in ("rr", "ndcg") if n in pq}


def compare(result: dict, entry: dict, complete_at: float, tol: Tolerance) -> list[Verdict]:
    """One verdict per metric both sides have; only gated metrics can regress. A metric with
    a noise floor in the entry is judged against it (see the module notes)."""
    new = series(result, complete_at)
    noise = entry.get("noise", {})
    old = entry_series(entry, complete_at)
    verdicts = []
    for metric, src in METRICS.items():
        if src not in new or src not in old:
            continue
        a, b = new[src], old[src]
        if a.shape != b.shape:
            raise ValueError(f"{metric}: {len(a)} queries now, {len(b)} in the baseline")
        if not len(a):
            continue
        # Every comparison with NaN is false: a NaN would pass any bound.
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise ValueError(f"{metric}: a value is not a finite number")
        floor = noise.get(metric)
        confidence = tol.confidence if floor is None else NOISE_CONFIDENCE
        ci = paired_bootstrap(a, b, resamples=tol.resamples, seed=tol.seed,
                              confidence=confidence)
        harmless = None
        below, above = ci.high < 0, ci.low > 0
        if floor is not None:
            margin = tol.noise_margin(floor)
            harmless = (floor["offset"] - margin, floor["offset"] + margin)
            below = below and ci.diff < harmless[0]
            above = above and ci.diff > harmless[1]
        gated = metric in tol.gated
        status = "ok"
        if gated and below and ci.diff <= -tol.min_effect:
            status = "regressed"
        elif above and ci.diff >= tol.min_effect:
            status = "improved"
        verdicts.append(Verdict(metric, float(b.mean()), float(a.mean()), float(ci.diff),
                                float(ci.low), float(ci.high), status, gated, confidence,
                                harmless))
    return verdicts


class BaselineError(Exception):
    """The baseline cannot be compared with this run; the message says how to fix that."""


RECREATE = "fix it, or replace it with this run's entries by `pytest --update-baselines=replace`"


def _bad(path: Path, problem: str) -> InputError:
    return InputError(str(path), f"not a valid baseline file ({problem}); {RECREATE}")


def _rate(x) -> bool:
    return (type(x) in (int, float)) and math.isfinite(x) and 0 <= x <= 1


def _check_entry(name: str, e) -> str | None:
    """What is wrong with one entry, or None."""
    if len(name.split("|")) != 3 or not all(name.split("|")):
        return "its key is not 'strategy|retriever|query set'"
    if not isinstance(e, dict):
        return "not an object"
    missing = [k for k in ("metrics", "cut_rate", "chunks", "per_query") if k not in e]
    if missing:
        return f"missing {', '.join(missing)}"
    if not isinstance(e["metrics"], dict):
        return "'metrics' is not an object"
    for m in METRICS:
        optional = m in ("mrr_at_k", "ndcg_at_k")  # recorded since rank metrics exist
        if not (optional and m not in e["metrics"]) and not _rate(e["metrics"].get(m)):
            return f"metrics.{m} is {e['metrics'].get(m)!r}, not a number in [0, 1]"
    if not _rate(e["cut_rate"]):
        return f"cut_rate is {e['cut_rate']!r}, not a number in [0, 1]"
    if type(e["chunks"]) is not int or e["chunks"] < 0:
        return f"chunks is {e['chunks']!r}, not a count"
    if "chunks_hash" in e and not (isinstance(e["chunks_hash"], str)
                                   and re.fullmatch(r"[0-9a-f]{64}", e["chunks_hash"])):
        return "chunks_hash is not a sha256 hex digest"
    if "params" in e and not isinstance(e["params"], dict):
        return "params is not an object"
    if "noise" in e:
        problem = _check_noise(e["noise"])
        if problem:
            return problem
    pq = e["per_query"]
    if not isinstance(pq, dict):
        return "per_query is not an object"
    lengths = set()
    for series_name in ("coverage", "budget_coverage", "doc_hit", "rr", "ndcg"):
        if series_name in ("rr", "ndcg") and series_name not in pq:
            continue
        values = pq.get(series_name)
        if not isinstance(values, list):
            return f"per_query.{series_name} is not a list"
        ok = (lambda v: v in (0, 1) and type(v) is int) if series_name == "doc_hit" else _rate
        bad = next((i for i, v in enumerate(values) if not ok(v)), None)
        if bad is not None:
            return (f"per_query.{series_name}[{bad}] is {values[bad]!r}, not "
                    + ("0 or 1" if series_name == "doc_hit" else "a number in [0, 1]"))
        lengths.add(len(values))
    if "first" in pq:
        first = pq["first"]
        if not isinstance(first, list) or not all(f is None or isinstance(f, str) for f in first):
            return "per_query.first is not a list of 'doc:start:end' spans"
        lengths.add(len(first))
    if len(lengths) > 1:
        return "the per_query lists differ in length"
    return None


def _check_noise(noise) -> str | None:
    if not isinstance(noise, dict):
        return "noise is not an object"
    for m, n in noise.items():
        if m not in METRICS:
            return f"noise.{m}: not a metric (known: {', '.join(METRICS)})"
        if not isinstance(n, dict):
            return f"noise.{m} is not an object"
        if not (type(n.get("offset")) in (int, float) and math.isfinite(n["offset"])
                and -1 <= n["offset"] <= 1):
            return f"noise.{m}.offset is {n.get('offset')!r}, not a number in [-1, 1]"
        if not (type(n.get("sd")) in (int, float) and math.isfinite(n["sd"]) and n["sd"] >= 0):
            return f"noise.{m}.sd is {n.get('sd')!r}, not a number >= 0"
        if type(n.get("trials")) is not int or n["trials"] < MIN_NOISE_TRIALS:
            return f"noise.{m}.trials is {n.get('trials')!r}, not a count >= {MIN_NOISE_TRIALS}"
    return None


def validate(path: Path, data) -> None:
    """Raise InputError naming the file and the first thing wrong with it."""
    if not isinstance(data, dict):
        raise _bad(path, "not a JSON object")
    if data.get("schema") != SCHEMA:
        raise _bad(path, f"schema is {data.get('schema')!r}, expected {SCHEMA}")
    for k in ("corpus", "settings", "query_sets", "entries"):
        if not isinstance(data.get(k), dict):
            raise _bad(path, f"{k!r} is {'missing' if k not in data else 'not an object'}")
    for k in ("name", "fingerprint"):
        if not isinstance(data["corpus"].get(k), str) and data["entries"]:
            raise _bad(path, f"corpus.{k} is not a string")
    for name, qs in data["query_sets"].items():
        if not isinstance(qs, dict) or not isinstance(qs.get("fingerprint"), str):
            raise _bad(path, f"query set {name!r} has no fingerprint")
    for name in sorted(data["entries"]):
        problem = _check_entry(name, data["entries"][name])
        if problem:
            raise _bad(path, f"entry {name!r}: {problem}")


def _read(path: Path) -> dict | None:
    """The validated contents, None when there is no file; InputError when it is bad."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(str(path), f"cannot read the baseline file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise _bad(path, f"not UTF-8: {e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:  # JSONDecodeError included
        raise _bad(path, str(e)) from None
    validate(path, data)
    return data


class Baseline:
    def __init__(self, path: Path, data: dict | None = None):
        self.path = Path(path)
        self.data = data or {"schema": SCHEMA, "corpus": {}, "settings": {},
                             "query_sets": {}, "entries": {}}

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """The file's baseline, or an empty one when there is no file yet. A file that is
        not valid JSON, or any entry of it that is malformed, raises InputError."""
        path = Path(path)
        return cls(path, _read(path))

    @property
    def exists(self) -> bool:
        return bool(self.data["entries"])

    def entry(self, strategy: str, retriever: str, query_set: str) -> dict | None:
        return self.data["entries"].get(key(strategy, retriever, query_set))

    def retrievers(self, strategy: str, query_set: str) -> list[str]:
        """The retrievers with an entry for this strategy and query set."""
        return sorted(k.split("|")[1] for k in self.data["entries"]
                      if k.split("|")[0] == strategy and k.split("|")[2] == query_set)

    def check_corpus_identity(self, identity: str) -> None:
        """Raise BaselineError when the file was made on another corpus of the same name."""
        recorded = self.data["corpus"].get("identity")
        if recorded is not None and recorded != identity and self.data["entries"]:
            raise BaselineError(
                f"{self.path}: recorded on the corpus {recorded!r}, not on this run's "
                f"{identity!r} (two corpora named {self.data['corpus'].get('name')!r}). "
                "Keep each corpus's baselines apart: pass --chunkeval-baselines OTHER_DIR for "
                "this one, or move the file there; `pytest --update-baselines=replace` "
                "takes the file over for this corpus.")

    def check_comparable(self, corpus: dict, settings: dict, query_set: str,
                         query_set_fingerprint: str) -> None:
        """Raise BaselineError when this baseline measured something else."""
        how = "If the change is intended, re-baseline with `pytest --update-baselines`."
        if corpus.get("identity"):
            self.check_corpus_identity(corpus["identity"])
        rec = self.data["corpus"]
        if rec.get("fingerprint") != corpus["fingerprint"]:
            raise BaselineError(
                f"{self.path}: recorded on corpus {rec.get('name')!r} fingerprint "
                f"{rec.get('fingerprint')}, this run's corpus has {corpus['fingerprint']}: "
                f"the corpus changed, so the numbers are not comparable. {how}")
        for name in COMPARED_SETTINGS:
            recorded = self.data["settings"].get(name, _RECORDED_BEFORE.get(name))
            now = settings.get(name, _RECORDED_BEFORE.get(name))
            if self.data["settings"] and recorded is not None and recorded != now:
                raise BaselineError(
                    f"{self.path}: recorded with {name}={recorded}, this run "
                    f"uses {name}={now}. {how}")
        qs = self.data["query_sets"].get(query_set)
        if qs is not None and qs.get("fingerprint") != query_set_fingerprint:
            raise BaselineError(
                f"{self.path}: query set {query_set!r} changed (fingerprint "
                f"{qs.get('fingerprint')} recorded, {query_set_fingerprint} now). {how}")

    def record(self, corpus: dict, settings: dict, query_sets: dict, result: dict) -> int:
        """Record one result; returns how many other entries it dropped. Entries measured on
        another corpus, under other settings or on another version of a query set are
        dropped: kept, they would later be compared against queries they were not measured
        on."""
        compared = {k: settings[k] for k in COMPARED_SETTINGS if k in settings}
        before = len(self.data["entries"])
        old = dict(self.data["settings"])
        if old:
            old = {**{k: v for k, v in _RECORDED_BEFORE.items() if k in compared}, **old}
        if (self.data["corpus"].get("fingerprint") not in (None, corpus["fingerprint"])
                or old not in ({}, compared)):
            self.data["entries"], self.data["query_sets"] = {}, {}
        for name, qs in query_sets.items():
            old = self.data["query_sets"].get(name)
            if old is not None and old != qs:
                self.data["entries"] = {k: v for k, v in self.data["entries"].items()
                                        if k.split("|")[2] != name}
        dropped = before - len(self.data["entries"])
        self.data["corpus"] = {k: corpus[k] for k in ("name", "fingerprint", "identity")
                               if k in corpus}
        self.data["settings"] = compared
        self.data["query_sets"].update(query_sets)
        k = key(result["strategy"], result["retriever"], result["query_set"])
        new = entry_from_result(result, settings["complete_at"])
        old = self.data["entries"].get(k)
        # A noise floor is measured against the entry's own numbers: it survives a re-record
        # only when nothing it was measured against changed.
        if old and "noise" in old and all(old.get(f) == new.get(f) for f in
                                           ("per_query", "chunks_hash", *RETRIEVER_FIELDS)):
            new["noise"] = old["noise"]
        self.data["entries"][k] = new
        return dropped

    def needs_update(self, rec: dict, tol: Tolerance) -> str | None:
        """Why the entry of this record should be rewritten under `failing`, or None."""
        r = rec["result"]
        entry = self.entry(r["strategy"], r["retriever"], r["query_set"])
        if entry is None:
            return "missing"
        try:
            self.check_comparable(rec["corpus"], rec["settings"], r["query_set"],
                                  rec["query_sets"][r["query_set"]]["fingerprint"])
        except BaselineError:
            return "not comparable"
        if entry.get("chunks_hash") != r["chunks"].get("hash"):
            return "chunks changed"
        if r["metrics"]["cut_rate"]["value"] > entry["cut_rate"] + tol.cut_slack:
            return "failed"
        try:
            verdicts = compare(r, entry, rec["settings"]["complete_at"], tol)
        except ValueError:
            return "not comparable"
        return "failed" if any(v.status == "regressed" for v in verdicts) else None

    def stale(self, known_strategies: set[str]) -> list[str]:
        return sorted(k for k in self.data["entries"] if k.split("|")[0] not in known_strategies)

    def save(self) -> Path:
        return atomic_write(self.path, dumps(self.data))


def corpus_identity(source: str, rootdir: str | Path) -> str:
    """What tells two corpora of the same name apart: the built-in corpus's name, else the
    directory, relative to the rootdir when inside it (the same on every checkout)."""
    if str(source) in BUILTIN_CORPORA:
        return str(source)
    path = Path(source).expanduser().resolve()
    try:
        return "dir:" + path.relative_to(Path(rootdir).resolve()).as_posix()
    except ValueError:
        return "dir:" + path.as_posix()


def baseline_path(directory: str | Path, corpus_name: str) -> Path:
    """The baseline file of a corpus: its name made safe for a file name, in `directory`.
    Two corpora of one name share the name; the file's recorded identity keeps them apart."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(corpus_name).name)
    return Path(directory) / f"{safe.strip('.') or 'corpus'}.json"


@dataclass
class UpdateSummary:
    path: Path
    recorded: int = 0  # entries written from this run
    unchanged: int = 0  # selected entries left as they were (mode `failing`)
    dropped: int = 0  # entries of another corpus, settings or query-set version
    total: int = 0
    replaced: str | None = None  # why the old file was replaced whole
    reasons: dict[str, str] = field(default_factory=dict)  # key -> why it was rewritten
    stale: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"{self.recorded} entries recorded"]
        if self.reasons:
            why = Counter(self.reasons.values())
            parts[0] += " (" + ", ".join(f"{n} {w}" for w, n in sorted(why.items())) + ")"
        if self.unchanged:
            parts.append(f"{self.unchanged} selected entries passed and were kept as they were")
        if self.dropped:
            parts.append(f"{self.dropped} dropped (measured on another corpus, settings or "
                         "query-set version)")
        parts.append(f"{self.total} in the file")
        text = f"{self.path} ({', '.join(parts)})"
        if self.replaced:
            text += f"; the old file was replaced: {self.replaced}"
        return text


def update_file(path: str | Path, records: list[dict], mode: str = "all", *,
                identity: str | None = None, tolerance: Tolerance = Tolerance(),
                known_strategies: set[str] | None = None) -> UpdateSummary:
    """Merge this run's records into the baseline file, under a lock held from the read to
    the rename so that a concurrent update's entries are never lost.

    Each record is {"corpus", "settings", "query_sets", "result"}. `mode` is one of
    UPDATE_MODES; entries no record names are never touched. Raises InputError for a file
    that is unreadable or invalid (unless mode is `replace`), BaselineError for a file made
    on another corpus (idem) or when the lock cannot be had."""
    if mode not in UPDATE_MODES:
        raise ValueError(f"unknown update mode {mode!r}; one of {', '.join(UPDATE_MODES)}")
    path = Path(path)
    summary = UpdateSummary(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked_for(path):
        try:
            baseline = Baseline.load(path)
            if identity is not None:
                baseline.check_corpus_identity(identity)
        except (InputError, BaselineError) as e:
            if mode != "replace":
                raise
            baseline, summary.replaced = Baseline(path), str(e)
        for rec in records:
            rec = {**rec, "corpus": {**rec["corpus"], **({"identity": identity} if identity
                                                         else {})}}
            r = rec["result"]
            k = key(r["strategy"], r["retriever"], r["query_set"])
            if mode == "failing":
                why = baseline.needs_update(rec, tolerance)
                if why is None:
                    summary.unchanged += 1
                    continue
                summary.reasons[k] = why
            summary.dropped += baseline.record(rec["corpus"], rec["settings"],
                                               rec["query_sets"], r)
            summary.recorded += 1
        baseline.save()
        summary.total = len(baseline.data["entries"])
        if known_strategies is not None:
            summary.stale = baseline.stale(known_strategies)
    return summary


def record_noise(path: str | Path, measured: dict[str, dict], *,
                 identity: str | None = None) -> list[str]:
    """Write calibrated noise floors into the entries they were measured against, under the
    update lock; returns the keys written. `measured` maps an entry key to {"entry": the
    calibration's own entry for it (entry_from_result), "noise": {metric: {"offset", "sd",
    "trials"}}}. Raises BaselineError naming every entry that is missing or holds other
    numbers than the calibration measured: its floor would describe another baseline."""
    path = Path(path)
    how = ("record the baseline first (`pytest --update-baselines`), then calibrate again")
    if not path.is_file():
        raise BaselineError(f"{path}: no baseline file; {how}")
    with locked_for(path):
        baseline = Baseline.load(path)
        if identity is not None:
            baseline.check_corpus_identity(identity)
        wrong = []
        for k, m in measured.items():
            entry = baseline.data["entries"].get(k)
            if entry is None:
                wrong.append(f"{k} (no entry)")
            elif (entry.get("chunks_hash") != m["entry"].get("chunks_hash")
                  or entry["per_query"].get("coverage") != m["entry"]["per_query"]["coverage"]):
                wrong.append(f"{k} (recorded from other chunks or another retriever version)")
        if wrong:
            raise BaselineError(f"{path}: cannot record the noise floor for "
                                f"{'; '.join(wrong)}; {how}")
        for k, m in measured.items():
            baseline.data["entries"][k]["noise"] = m["noise"]
        baseline.save()
    return sorted(measured)


def locked_for(path: Path):
    """The lock an update of the baseline file `path` holds from its read to its rename."""
    return locked(path.parent, f"{path}: another run has been updating a baseline here for "
                               f"{LOCK_TIMEOUT} s; try again when it has finished")


@contextlib.contextmanager
def locked(directory: Path, timeout_message: str, timeout: float = LOCK_TIMEOUT):
    """An exclusive lock on the baselines directory, across processes, for a read-merge-write.
    flock on the directory itself: no lock file is left in the user's repository."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BaselineError(timeout_message) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


_SCALAR_LIST = re.compile(r"\[[^\[\]{}]*\]")


def dumps(data: dict) -> str:
    """Stable JSON for review: sorted keys, one key a line, each list of scalars on one line."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)
    return _SCALAR_LIST.sub(lambda m: re.sub(r"\n\s*", " ", m.group(0)).replace("[ ", "[")
                            .replace(" ]", "]"), text) + "\n"
