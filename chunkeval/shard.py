"""Shards: the strategy x query set work split over N CI jobs or machines, evenly by cost.

A task is one strategy on one query set (every retriever runs inside it, sharing its chunks).
Every shard computes the same plan from the same inputs and keeps its own part, so shards
need no coordination: the plan is a greedy longest-task-first packing of the tasks' costs
into N bins, ties broken by the task's name, never by the order the tasks were listed in.

A task's cost is its measured seconds in an earlier results.json when one is given, else an
estimate: the characters of its corpus view times the weight of its strategy's family.
Estimates for tasks an earlier run did not measure are put on the measured scale (the median
ratio of measured to estimated seconds), so one plan can mix both.
"""

from __future__ import annotations

import re
import statistics
import zlib
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from .errors import ConfigError, InputError
from .results import Result, Results
from .strategies.families import weight


Task = tuple[str, str]  # (query set, strategy): the query set's name as results.json has it


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written: "2/4" is the second of four
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict:
        return {"index": self.index, "count": self.count}


def parse(text: str, where: str = "--shard") -> Shard:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m:
        raise ConfigError(f"{where}: expected I/N such as 1/2, got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"{where}: {text!r}: I must be between 1 and N")
    return Shard(index, count)


def measured_seconds(results: Results) -> dict[Task, float]:
    """(query set, strategy) -> seconds spent on it (all retrievers) in a results document."""
    seconds: dict[Task, float] = {}
    for r in results.results:
        task = (r.query_set, r.strategy)
        seconds[task] = seconds.get(task, 0.0) + r.seconds.total
    return seconds


def costs(tasks: Iterable[Task], estimate: Callable[[Task], float],
          measured: dict[Task, float] | None = None) -> dict[Task, float]:
    tasks = list(tasks)
    est = {t: float(estimate(t)) for t in tasks}
    measured = {t: s for t, s in (measured or {}).items() if t in est and s > 0}
    if not measured:
        return est
    ratios = [measured[t] / est[t] for t in measured if est[t] > 0]
    scale = statistics.median(ratios) if ratios else 1.0
    return {t: measured.get(t, est[t] * scale) for t in tasks}


def plan(cost: dict[Task, float], count: int) -> list[list[Task]]:
    """The tasks of each of `count` shards: the costliest task first to the least loaded
    shard (the lowest-numbered on a tie)."""
    bins: list[list[Task]] = [[] for _ in range(count)]
    load = [0.0] * count
    for task in sorted(cost, key=lambda t: (-cost[t], t)):
        i = min(range(count), key=lambda b: (load[b], b))
        bins[i].append(task)
        load[i] += cost[task]
    return bins


def mine(shard: Shard, cost: dict[Task, float]) -> set[Task]:
    return set(plan(cost, shard.count)[shard.index - 1])


def item_shard(node_id: str, count: int) -> int:
    """1-based shard of a test that is not a strategy x query set task: a stable hash of its
    id, so every shard agrees without knowing the others' items."""
    return zlib.crc32(node_id.encode("utf-8")) % count + 1


# -- merging shard results -------------------------------------------------------------------
def merge(docs: list[tuple[str, Results]]) -> Results:
    """One results document from the results.json of every shard of a run, ordered as the
    unsharded run orders it. `docs` are (where, document) pairs, each already checked."""
    if not docs:
        raise ConfigError("no shard results given")
    first_where, first = docs[0]
    for where, doc in docs:
        if doc.shard is None:
            raise InputError(where, "not the results of a sharded run (no 'shard' entry); "
                                    "run it with --shard I/N")
    count = first.shard["count"]
    seen: dict[int, str] = {}
    retrievers_seen: dict[str, tuple[str, dict]] = {}
    for where, doc in docs:
        sh = doc.shard
        if sh["count"] != count:
            raise InputError(where, f"shard {sh['index']}/{sh['count']}, but {first_where} "
                                    f"is one of {count}")
        if sh["index"] in seen:
            raise InputError(where, f"shard {sh['index']}/{count} given twice (also "
                                    f"{seen[sh['index']]})")
        seen[sh["index"]] = where
        for k in ("schema", "chunkeval", "corpus", "settings", "query_sets", "strategies",
                  "analyzer"):
            if getattr(doc, k) != getattr(first, k):
                raise InputError(where, f"its {k!r} differs from {first_where}'s: the shards "
                                        "did not run the same evaluation")
        for name, described in doc.retrievers.items():
            first_seen = retrievers_seen.setdefault(name, (where, described))
            if first_seen[1] != described:
                raise InputError(where, f"retriever {name!r} is {described}, but in "
                                        f"{first_seen[0]} {first_seen[1]}: the shards ran "
                                        "other versions or code")
        for i, r in enumerate(doc.results):
            claimed = (doc.retrievers.get(r.retriever) or {}).get("version")
            if claimed is not None and r.retriever_version not in (None, claimed):
                raise InputError(where, f"results[{i}] was measured with {r.retriever} "
                                        f"{r.retriever_version}, its header says {claimed}")
        for k in ("strategies", "retrievers"):
            if sh.get(k) != first.shard.get(k):
                raise InputError(where, f"its shard {k} differ from {first_where}'s")
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise ConfigError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing: "
                          f"give the results of all {count} shards")
    names, plan = first.shard["strategies"], first.shard["retrievers"]
    order = {(q, s, r): i for i, (q, s, r) in enumerate(
        (q, s, r) for q in first.query_sets for s in names for r in plan[s])}
    results: dict[tuple, Result] = {}
    retrievers: dict[str, dict] = {}
    for where, doc in docs:
        for r in doc.results:
            key = (r.query_set, r.strategy, r.retriever)
            if key not in order:
                raise InputError(where, f"result {'|'.join(key)} is not in the run's matrix")
            if key in results:
                raise InputError(where, f"result {'|'.join(key)} is in two shards")
            results[key] = r
        retrievers |= doc.retrievers
    failures = [f for _, doc in docs for f in doc.failures]
    failed = {(f.query_set, f.strategy, r) for f in failures
              for r in ([f.retriever] if f.retriever else plan.get(f.strategy, []))}
    absent = [k for k in order if k not in results and k not in failed]
    if absent:
        raise ConfigError(f"{len(absent)} result(s) of the matrix in no shard, e.g. "
                          f"{'|'.join(absent[0])}")
    merged = sorted(results.values(), key=lambda r: order[(r.query_set, r.strategy, r.retriever)])
    in_order = dict.fromkeys(r.retriever for r in merged)
    return replace(
        first, shard=None, results=merged, failures=failures,
        retrievers={n: retrievers[n] for n in in_order if n in retrievers},
        # counted over every shard, not taken from the first
        embeddings={k: sum(d.embeddings.get(k, 0) for _, d in docs) for k in ("embedded",
                                                                              "cached")},
        result_cache=None if first.result_cache is None else {
            "enabled": any((d.result_cache or {}).get("enabled") for _, d in docs),
            "reused": sum(1 for r in merged if r.reused),
            "evaluated": sum(1 for r in merged if not r.reused)})


def select(shard: Shard, evaluation, tasks: list[tuple[str, str]],
           timings: dict[Task, float] | None = None) -> list[tuple[str, str]]:
    """This shard's (query spec, strategy) tasks, in their given order."""
    named = {t: (evaluation.query_set(t[0]).name, t[1]) for t in tasks}
    cost = task_costs(evaluation, tasks, timings)
    keep = mine(shard, {named[t]: c for t, c in cost.items()})
    return [t for t in tasks if named[t] in keep]


def task_costs(evaluation, tasks: list[tuple[str, str]],
               timings: dict[Task, float] | None = None) -> dict[tuple[str, str], float]:
    """(query spec, strategy) -> its cost: measured seconds, else the estimate."""
    named = {t: (evaluation.query_set(t[0]).name, t[1]) for t in tasks}
    spec_of = {name: t[0] for t, name in named.items()}

    def estimate(task: Task) -> float:
        view = evaluation.query_set(spec_of[task]).view
        return view.chars * weight(evaluation.strategy(task[1]).family)

    cost = costs(named.values(), estimate, timings)
    return {t: cost[named[t]] for t in tasks}
