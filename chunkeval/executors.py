"""Executors past one process: the strategy x query set tasks of a run on a Ray cluster.

Each task (one strategy on one query set, every retriever inside it) is a call to an actor.
There is one actor per CPU of the cluster; the evaluation - corpus, query sets and their
views, settings - goes into Ray's object store once and each actor reads it once, when it
starts, and keeps it. Tasks go out costliest first as actors free up, and results come back
as they finish, so progress is live. With no address an embedded local cluster of `workers`
CPUs is started and shut down after the run; with an address the run connects to a running
cluster, whose nodes need chunkeval (and any outside splitter's module) importable.

Ray rather than Dask, measured by bench/executors.py on this project's 2-core machine (the
same 8 tasks, 2 workers): Ray started slower (15-25 s against 8-11 s) and held more memory
(peak 1.2-1.4 GB against 0.6-1.0 GB for driver and cluster), but ran the tasks about twice as
fast once started (BM25 only: 44 s against 54 s in all, medians of 3; BM25 and LSA: 102 s
against 169 s), so for real runs, which take minutes, it finishes first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator

EXECUTORS = ("process", "ray")


class ExecutorError(Exception):
    """The executor cannot run: its package is missing or its cluster cannot be reached."""


@dataclass
class RayExecutor:
    address: str | None = None  # a running cluster, e.g. ray://10.0.0.5:10001 or 10.0.0.5:6379
    workers: int = 2  # CPUs (so actors) of the embedded cluster
    splitters: tuple[str, ...] = ()  # MODULE:ATTR the actors register before their first task
    root: str | None = None  # where those modules import from

    def map(self, evaluation, tasks: list[tuple[str, str]],
            plan: dict[str, list[str]]) -> Iterator[tuple[tuple[str, str], list[dict]]]:
        """(task, its result entries) as each task finishes; `plan`: strategy -> retrievers."""
        try:
            import ray
            from ray.util import ActorPool
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install "
                                "'chunkeval[distributed]'") from None
        started = not ray.is_initialized()
        if started and self.address:
            _reachable(self.address)
        if started:
            quiet = dict(include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
            try:
                if self.address:
                    ray.init(address=self.address, **quiet)
                else:
                    ray.init(num_cpus=max(1, self.workers), **quiet)
            except (ConnectionError, RuntimeError, ValueError) as e:
                where = f"at {self.address}" if self.address else "locally"
                raise ExecutorError(f"cannot start or reach a Ray cluster {where}: {e}") from None
        try:
            actors = self.workers if not self.address else \
                max(1, int(ray.cluster_resources().get("CPU", 1)))
            shipped = ray.put(_portable(evaluation))
            worker = ray.remote(num_cpus=1)(_Worker)
            pool = ActorPool([worker.remote(shipped, self.splitters, self.root)
                              for _ in range(min(actors, max(1, len(tasks))))])
            # Costliest first: the long tasks start early instead of ending the run alone.
            cost = task_costs(evaluation, tasks)
            yield from pool.map_unordered(lambda actor, task: actor.run.remote(task, plan[task[1]]),
                                          sorted(tasks, key=lambda t: -cost[t]))
        finally:
            if started:
                ray.shutdown()


def _reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast on a wrong address: Ray itself retries an unreachable one for minutes."""
    import socket
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        if address == "auto":
            return
        raise ExecutorError(f"--address {address}: expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: "
                            f"{e.strerror or e}") from None


class _Worker:
    """One actor: the evaluation, read once, and the tasks it is given."""

    def __init__(self, evaluation, splitters: tuple[str, ...], root: str | None):
        if splitters:
            _register(splitters, root)
        self.evaluation = evaluation

    def run(self, task: tuple[str, str], rets: list[str]):
        return task, self.evaluation._task(task, rets)


def task_costs(evaluation, tasks):
    from .shard import task_costs
    return task_costs(evaluation, tasks)


def _portable(evaluation):
    """The evaluation without what a run builds (chunks, indexes, results): only its inputs
    travel to the workers."""
    from .evaluate import Evaluation
    copy = Evaluation.__new__(Evaluation)
    copy.__dict__.update(evaluation.__dict__)
    copy._chunked, copy._indexes, copy._results = {}, {}, {}
    return copy


def _register(splitters: tuple[str, ...], root: str | None) -> None:
    """A worker is another process: outside splitters are registered there too."""
    from . import strategies
    from .config import on_path
    with on_path(root or "."):
        for spec in splitters:
            strategies.load_splitter(spec)


def make(name: str, *, jobs: int, address: str | None = None, splitters=(), root=None):
    """The executor named on the command line; None for the built-in process pool."""
    if name == "process":
        if address:
            raise ExecutorError("--address needs --executor ray")
        return None
    if name == "ray":
        return RayExecutor(address=address, workers=jobs, splitters=tuple(splitters),
                           root=str(root) if root is not None else None)
    raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
