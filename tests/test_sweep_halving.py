"""Successive halving drops only what a rung shows worse than its leader by more than the
margin: on made-up per-query values, through `sweep.halve` with a stand-in evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from chunkeval import sweep
from chunkeval.report.sweep_page import rung_dropped

MARGIN = 0.02


@dataclass(frozen=True)
class Questions:
    name: str
    queries: tuple


class Values:
    """An evaluation whose every configuration scores the given value on each query (the
    query is its index); it keeps the samples the rungs were evaluated on."""

    def __init__(self, values: dict[str, np.ndarray]):
        self.values = values
        n = len(next(iter(values.values())))
        self.sets = {"made-up": Questions("made-up", tuple(range(n)))}
        self.samples: list[tuple[int, ...]] = []

    def query_set(self, spec):
        return self.sets[spec]

    def add_query_set(self, spec, qs):
        self.sets[spec] = qs
        self.samples.append(qs.queries)

    def stored_task(self, task, retrievers):
        spec, name = task
        per_query = [SimpleNamespace(coverage=float(self.values[name][q]),
                                     budget_coverage=float(self.values[name][q]))
                     for q in self.sets[spec].queries]
        return [SimpleNamespace(per_query=per_query) for _ in retrievers]


def halve(values: dict[str, np.ndarray]):
    evaluation = Values(values)
    pool = np.arange(len(next(iter(values.values()))))
    finalists, rungs, failures = sweep.halve(evaluation, list(values), ["bm25"], "made-up",
                                             "recall_at_k", pool, 0.05, MARGIN,
                                             progress=False)
    assert failures == []
    return finalists, rungs, evaluation.samples


def alike(n: int, configurations: int, seed: int) -> dict[str, np.ndarray]:
    """Configurations that differ from a common base by a little noise."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.7, n)
    return {f"c{i}": np.clip(base + rng.normal(0, 0.05, n), 0, 1) for i in range(configurations)}


def test_the_best_on_every_question_is_kept_when_the_first_sample_does_not_show_it_worse():
    n = 90
    grid = alike(n, 19, seed=3)
    # which questions the first rung sees: ask once, with a grid of the same size
    _, _, (first, *_) = halve({**grid, "star": grid["c0"]})
    on_sample = np.zeros(n, dtype=bool)
    on_sample[list(first)] = True
    base = np.mean(list(grid.values()), axis=0)
    # a little below the others on the first rung's questions, far above them on the rest
    star = np.where(on_sample, base - 0.02, np.minimum(base + 0.25, 1))
    values = {**grid, "star": star}
    means = {k: v[on_sample].mean() for k, v in values.items()}
    ranked = sorted(means, key=lambda k: -means[k])
    assert ranked.index("star") >= sweep.FINALISTS  # a cut by rank would have dropped it
    assert max(values, key=lambda k: values[k].mean()) == "star"

    finalists, (rung, *_), _ = halve(values)

    assert rung["queries"] == len(first) and "star" not in rung["dropped"]
    assert "star" in finalists
    every = np.ones(n, dtype=bool)
    costs = {k: (0,) for k in finalists}
    best, _, _ = sweep.compare({k: values[k] for k in finalists}, costs, every, every, 0.05,
                               MARGIN)
    assert best == "star"


def test_a_clearly_worse_configuration_is_dropped_with_its_bound():
    n = 90
    values = alike(n, 12, seed=4)
    poor = {f"poor{i}": np.clip(values["c0"] - 0.3, 0, 1) for i in range(3)}
    values.update(poor)

    finalists, (rung, *_), _ = halve(values)

    assert sorted(rung["dropped"]) == sorted(poor)
    assert sorted(finalists) == sorted(set(values) - set(poor))
    assert rung["kept"] == 12 and rung["evaluated"] == 15
    for b in rung["bounds"]:
        assert b["high"] < -MARGIN and b["leader"] in finalists
    said = rung_dropped(rung)
    assert len(said) == 3 and all("points vs" in s and s.split(" (≤ ")[0] in poor
                                  for s in said)


def test_configurations_the_samples_cannot_tell_apart_all_reach_the_final_comparison():
    values = alike(90, 15, seed=5)
    finalists, rungs, _ = halve(values)
    assert sorted(finalists) == sorted(values)
    assert all(r["dropped"] == [] and r["kept"] == r["evaluated"] for r in rungs)
