"""The whole matrix of an evaluation: every strategy x retriever x query set, as tasks (a
strategy on a query set, its retrievers inside) run here or by an executor's workers."""

from __future__ import annotations

from typing import Iterable

from .. import retrieval, scoring, strategies
from ..errors import StrategyFailed
from ..executors import Executor, Serial
from ..progress import Progress
from ..retrieval.registry import Retriever
from ..results import Failure, Result, Results
from ..shard import select
from ..strategies.defaults import default_retrievers
from ..strategies.registry import Strategy
from .cached import reused, stored


class Matrix:
    """The matrix side of an Evaluation (which it is a part of)."""

    def run(self, strategy_names: Iterable[str | Strategy] | None = None,
            retrievers: Iterable[str | Retriever] | dict[str, list[str | Retriever]] | None
            = None,
            progress: bool | None = None, shard=None, timings: dict | None = None,
            executor: Executor | None = None) -> Results:
        """Every strategy x retriever x query set, each task (a strategy on a query set, its
        retrievers inside) run by `executor` (executors.py; default: one after the other,
        here). `shard` (a shard.Shard) keeps only its part of the tasks, planned with
        `timings` (measured seconds per (query set, strategy)) or estimates. Strategies and
        retrievers are named or handed in (Evaluation.strategy, .retriever)."""
        names = [self.strategy(s).name for s in strategy_names or strategies.names()]
        if isinstance(retrievers, dict):  # a plan: strategy -> its retrievers
            plan = {n: list(retrievers[n]) for n in names}
        else:
            plan = {n: list(retrievers) if retrievers else default_retrievers(n) for n in names}
        plan = {n: [self.retriever(r).name for r in rets] for n, rets in plan.items()}
        for n in names:
            strategies.require(n)  # fail before any work, as a retriever does here
        for r in {r for rets in plan.values() for r in rets}:
            # unknown or not installed: fail before any work
            retrieval.build_index(self.retriever(r), [], get=self.retriever)
        self.analyzer  # resolved once here, inherited by workers
        tasks = [(spec, name) for spec in self.query_specs for name in names]
        for spec in self.query_specs:
            self.asked(spec)  # built once here, inherited by workers
        if shard is not None:
            tasks = select(shard, self, tasks, timings)
        by_task: dict[tuple[str, str], list[Result]] = {}
        with Progress("evaluating", len(tasks), enabled=progress) as bar:
            # Tasks the caches answer whole are read here: sending them to workers would
            # cost more (forking, pickling the results back) than reading them.
            for task in tasks:
                found = self.stored_task(task, plan[task[1]])
                if found is not None:
                    by_task[task] = found
                    bar.step(f"{task[1]} {task[0]}")
            rest = [t for t in tasks if t not in by_task]
            for task, res in (executor or Serial()).map(self, rest, plan, timings):
                by_task[task] = res
                bar.step(f"{task[1]} {task[0]}")
        done = [r for task in tasks for r in by_task[task]]
        failures = list({(f.strategy, f.retriever, f.query_set): f for f in done
                         if isinstance(f, Failure)}.values())
        results = self.document([r for r in done if isinstance(r, Result)], names, failures)
        if shard is not None:
            # what `chunkeval merge` needs to rebuild the whole run's order and check it
            results.shard = {**shard.to_json(), "strategies": names, "retrievers": plan,
                             "tasks": [[self.query_set(q).name, s] for q, s in tasks]}
        return results

    def stored_task(self, task: tuple[str, str], retrievers: list[str]) -> list[Result] | None:
        """The task's results when the chunk cache holds its chunks' summary and the result
        cache every retriever's result; else None, having built nothing."""
        spec, name = task
        key = (name, spec)
        if not self.result_cache or key in self._failed:
            return None
        if key not in self._chunked and self._stored_summary(name, spec) is None:
            return None
        if any(self._unchecked(ret) for ret in retrievers):
            return None  # checked where the task runs, where a failure is the task's
        summary = self.chunk_summary(name, spec)
        qs = self.query_set(spec)
        out = []
        for ret in retrievers:
            if (name, ret, spec) not in self._results:
                stored_key = self.result_key(summary, ret, qs)
                kept = stored(stored_key, ret, qs, summary,
                              self.settings.complete_at) if stored_key else None
                if kept is None:
                    return None
                self._results[(name, ret, spec)] = reused(kept, name, summary)
            out.append(self._results[(name, ret, spec)])
        return out

    def run_task(self, task: tuple[str, str], retrievers: list[str]
                 ) -> list[Result | Failure]:
        """One task: a strategy on a query set (`(spec, strategy)`), with each retriever; a
        result or, where the strategy or the retriever failed, the failure. Its chunks and
        indexes are released afterwards: memory stays flat over a run."""
        spec, name = task
        out: list[Result | Failure] = []
        for i, ret in enumerate(retrievers):
            try:
                out.append(self.result(name, ret, spec))
            except StrategyFailed as e:
                if e.retriever not in (None, ret):  # a part of a hybrid: the hybrid failed
                    e = StrategyFailed(name, f"its part {e.retriever!r}: {e.problem}",
                                       retriever=ret, document=e.document, detail=e.detail)
                out.append(Failure(e.strategy, self.query_set(spec).name, str(e), e.retriever,
                                   e.document, e.detail))
            # An index no later retriever of the task fuses goes now, not after the next
            # index is built beside it.
            later = {p for r in retrievers[i + 1:] for p in (r, *self.retriever(r).fuses)}
            for key in [k for k in self._indexes if k[0] == name and k[2] == spec
                        and k[1] not in later]:
                del self._indexes[key]
        self.release(name, spec)
        return out

    def prepare_for_workers(self) -> None:
        """Build what every task shares (query sets, the analyzer, the scoring tables) once,
        so that forked workers inherit it instead of each building its own."""
        self.analyzer
        for spec in self.query_specs:
            scoring.prepare(self.query_set(spec), self.settings.shingle)

