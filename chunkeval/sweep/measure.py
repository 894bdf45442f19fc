"""The grid's configurations evaluated in the session, each through the result cache, with
what is done and left said as it goes."""

from __future__ import annotations

import time

from ..progress import Progress
from ..results import Failure, Result


def evaluate(evaluation, names: list[str], retrievers: list[str], specs: list[str],
             progress: bool | None = None) -> tuple[dict, list[Failure]]:
    """(strategy, retriever, query set spec) -> Result for every configuration; what the
    caches hold is read, the rest evaluated, with configurations done, remaining and an
    estimate of the time left."""
    results: dict[tuple[str, str, str], Result] = {}
    failures: list[Failure] = []
    tasks = [(spec, name) for spec in specs for name in names]
    started, evaluated = time.monotonic(), 0
    with Progress("sweep", len(tasks), enabled=progress) as bar:
        for i, task in enumerate(tasks):
            stored = evaluation.stored_task(task, retrievers)
            if stored is None:
                stored = evaluation.run_task(task, retrievers)
                evaluated += 1
            for r, out in zip(retrievers, stored):
                if isinstance(out, Failure):
                    failures.append(out)
                else:
                    results[(task[1], r, task[0])] = out
            left = len(tasks) - i - 1
            rate = (time.monotonic() - started) / max(1, evaluated)
            eta = f", about {_duration(rate * left)} left" if evaluated and left else ""
            bar.step(f"{task[1]} on {task[0]} ({left} to go{eta})")
    return results, failures


def _duration(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds < 90 else f"{seconds / 60:.0f} min"
