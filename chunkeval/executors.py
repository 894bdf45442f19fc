"""Executors past one process: the strategy x query set tasks of a run on a Dask cluster.

Each task (one strategy on one query set, every retriever inside it) is a Dask task. The
evaluation - corpus, query sets and their views, settings - is scattered to every worker once
(broadcast) and stays in its memory; tasks only name what to compute. Results come back as
they finish, so progress is live. With no address an embedded local cluster of worker
processes is started (one single-threaded worker per job) and closed after the run; with an
address the run connects to a running scheduler, whose workers need chunkeval (and any
outside splitter's module) importable.

Dask rather than Ray: on a 2-core machine a local Dask cluster starts in about two seconds
and adds little memory, where Ray's head node (GCS, raylet, dashboard, object store) takes
several times longer and holds more memory than the workers' own work; the timings are in
bench/executors.py. Both run the same tasks; Dask is also a plain pip install.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterator

EXECUTORS = ("process", "dask")


class ExecutorError(Exception):
    """The executor cannot run: its package is missing or its cluster cannot be reached."""


@dataclass
class DaskExecutor:
    address: str | None = None  # a running scheduler, e.g. tcp://10.0.0.5:8786
    workers: int = 2  # worker processes of the embedded cluster
    splitters: tuple[str, ...] = ()  # MODULE:ATTR the workers register before a task
    root: str | None = None  # where those modules import from
    connect_timeout: str = "10s"
    _client: object = field(default=None, repr=False)

    def map(self, evaluation, tasks: list[tuple[str, str]],
            rets: list[str]) -> Iterator[tuple[tuple[str, str], list[dict]]]:
        """(task, its result entries) as each task finishes."""
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError:
            raise ExecutorError("--executor dask needs Dask's distributed scheduler: "
                                "pip install 'chunkeval[distributed]'") from None
        cluster = None
        try:
            if self.address:
                try:
                    client = Client(self.address, timeout=self.connect_timeout)
                except (OSError, TimeoutError) as e:
                    raise ExecutorError(f"cannot reach the Dask scheduler at {self.address}: "
                                        f"{e}") from None
            else:
                # Single-threaded workers: BM25 and LSA use all of a worker's cores through
                # numpy, and a second thread per worker would only hold a second index.
                # Its own shutdown chatter ("still alive after 4 seconds, killing") is no
                # news to the user: only errors are shown.
                cluster = LocalCluster(n_workers=max(1, self.workers), threads_per_worker=1,
                                       processes=True, dashboard_address=None,
                                       silence_logs=logging.ERROR)
                client = Client(cluster)
            with client:
                shipped = client.scatter(_portable(evaluation), broadcast=True)
                # A task goes out when a worker is free, the costliest first: handed out all
                # at once, they would be placed before anyone knows which ones are slow.
                cost = task_costs(evaluation, tasks)
                todo = iter(sorted(tasks, key=lambda t: -cost[t]))
                futures: dict = {}
                running = as_completed()

                def submit() -> None:
                    task = next(todo, None)
                    if task is not None:
                        future = client.submit(_task, shipped, task, rets, self.splitters,
                                               self.root, pure=False,
                                               key=f"chunkeval-{len(futures)}-{task[1]}")
                        futures[future] = task
                        running.add(future)

                for _ in range(max(1, sum(client.nthreads().values()))):
                    submit()
                for future in running:
                    yield futures[future], future.result()
                    submit()
        finally:
            if cluster is not None:
                cluster.close()


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


def _task(evaluation, task: tuple[str, str], rets: list[str], splitters: tuple[str, ...],
          root: str | None) -> list[dict]:
    if splitters:
        _register(splitters, root)
    return evaluation._task(task, rets)


_REGISTERED: set[str] = set()


def _register(splitters: tuple[str, ...], root: str | None) -> None:
    """A worker is another process: outside splitters are registered there too, once."""
    from . import strategies
    from .config import on_path
    todo = [s for s in splitters if s not in _REGISTERED]
    if not todo:
        return
    with on_path(root or "."):
        for spec in todo:
            strategies.load_splitter(spec)
            _REGISTERED.add(spec)


def make(name: str, *, jobs: int, address: str | None = None, splitters=(), root=None):
    """The executor named on the command line; None for the built-in process pool."""
    if name == "process":
        if address:
            raise ExecutorError("--address needs --executor dask")
        return None
    if name == "dask":
        return DaskExecutor(address=address, workers=jobs, splitters=tuple(splitters),
                            root=str(root) if root is not None else None)
    raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
