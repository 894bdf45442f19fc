"""Where the tasks of a run execute: here one after the other, in a pool of forked processes,
or on a Ray cluster. One interface: `map(evaluation, tasks, plan, timings)` yields
(task, its results) as each task finishes; a task is one strategy on one query set, every
retriever of `plan[strategy]` inside it, run by `Evaluation.run_task`.

The pool and Ray hand out the costliest tasks first (shard.task_costs: measured seconds, else
the view's size times its strategy family's weight), so that a long task rarely starts when
the rest are done. Ray was chosen over Dask by measurement (bench/results/executors.md).
"""

from __future__ import annotations

import logging
import multiprocessing
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

from . import outside, retrieval, strategies
from .errors import ConfigError
from .registry import Components
from .results import Failure
from .shard import task_costs

Task = tuple[str, str]  # (query set spec, strategy)
Plan = dict[str, list[str]]  # strategy -> its retrievers
EXECUTORS = ("process", "ray")


class Executor(Protocol):
    """Runs an evaluate.Evaluation's tasks (it never builds one, so it does not import it)
    and yields each task with its outcomes, a results.Result or results.Failure for each
    retriever, as it finishes."""

    def map(self, evaluation: Any, tasks: list[Task], plan: Plan,
            timings: dict | None = None) -> Iterator[tuple[Task, list]]: ...


@dataclass
class Serial:
    """Every task in this process, in the order given."""

    def map(self, evaluation, tasks, plan, timings=None):
        for task in tasks:
            yield task, evaluation.run_task(task, plan[task[1]])


@dataclass
class ProcessPool:
    """`jobs` forked worker processes, each running whole tasks; they inherit the evaluation
    (corpus, query sets, scoring tables) instead of each building its own."""

    jobs: int

    def map(self, evaluation, tasks, plan, timings=None):
        if self.jobs <= 1 or len(tasks) <= 1:
            yield from Serial().map(evaluation, tasks, plan)
            return
        evaluation.prepare_for_workers()
        cost = task_costs(evaluation, tasks, timings)
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(self.jobs, len(tasks)), initializer=_adopt,
                      initargs=(evaluation, plan, Components.in_use())) as pool:
            yield from pool.imap_unordered(_run, sorted(tasks, key=lambda t: -cost[t]))


# A pool worker's evaluation and plan, set once by the pool's initializer in that process.
_ADOPTED: tuple[Any, Plan] | None = None


def _adopt(evaluation, plan: Plan, components: Components | None) -> None:
    """Also the run's registries: a worker forked again by the pool's own thread (to replace
    one that died) would not inherit them with the context of the run's thread."""
    global _ADOPTED
    _ADOPTED = (evaluation, plan)
    if components is not None:
        components.activate()  # for the rest of this worker's life


def _run(task: Task):
    evaluation, plan = _ADOPTED
    return task, evaluation.run_task(task, plan[task[1]])


@dataclass
class RayExecutor:
    """One actor per CPU of the cluster. The evaluation goes into Ray's object store once and
    each actor reads it once, when it starts; tasks go out costliest first as actors free up,
    and results come back as they finish. With no address an embedded local cluster of
    `workers` CPUs is started and shut down after the run; with an address the run connects
    to a running cluster, whose nodes need chunkeval installed. The project's own modules
    (splitters, retrievers, length measures) are imported on every actor as they were here.

    A worker that dies (killed, out of memory) is restarted and its task run again, up to
    RETRIES times; a task that still cannot finish is a Failure in the results, not the end
    of the run: every finished task's results are kept."""

    address: str | None = None  # a running cluster, e.g. ray://10.0.0.5:10001 or 10.0.0.5:6379
    workers: int = 2  # CPUs (so actors) of the embedded cluster
    # the project's modules to import on each actor: (what, MODULE:ATTR, root), as
    # Session.modules lists them
    modules: tuple[tuple[str, str, str], ...] = ()

    def map(self, evaluation, tasks, plan, timings=None):
        try:
            import ray
            from ray import exceptions as rx
        except ImportError:
            raise ConfigError("--executor ray needs Ray: pip install "
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
                raise ConfigError(f"cannot start or reach a Ray cluster {where}: {e}") from None
        try:
            actors = self.workers if not self.address else \
                max(1, int(ray.cluster_resources().get("CPU", 1)))
            shipped = ray.put(evaluation)  # its inputs only: see Evaluation.__getstate__
            worker = ray.remote(num_cpus=1, max_restarts=RETRIES,
                                max_task_retries=RETRIES)(_Worker)
            idle = [worker.remote(shipped, self.modules)
                    for _ in range(min(actors, max(1, len(tasks))))]
            cost = task_costs(evaluation, tasks, timings)
            queue = sorted(tasks, key=lambda t: -cost[t])
            queue.reverse()  # popped from the end: costliest first
            running: dict = {}  # result ref -> (task, actor)
            while queue or running:
                while idle and queue:
                    actor, task = idle.pop(), queue.pop()
                    running[actor.run.remote(task, plan[task[1]])] = (task, actor)
                [done], _ = ray.wait(list(running), num_returns=1)
                task, actor = running.pop(done)
                try:
                    outcome = ray.get(done)
                except (rx.RayActorError, rx.WorkerCrashedError, rx.ObjectLostError,
                        rx.OutOfMemoryError, rx.NodeDiedError) as e:
                    # the worker died, and its restarts with it: a new one for what is left
                    yield task, [_lost(evaluation, task, e)]
                    idle.append(worker.remote(shipped, self.modules))
                    continue
                except rx.RayTaskError as e:  # raised by the task: that error, not Ray's
                    cause = getattr(e, "cause", None)
                    raise (cause if isinstance(cause, BaseException) else e) from None
                yield outcome
                idle.append(actor)
        finally:
            if started:
                ray.shutdown()


RETRIES = 2  # restarts of a dead Ray worker, and re-runs of the task it held


def _lost(evaluation, task: Task, error: BaseException) -> Failure:
    spec, strategy = task
    return Failure(strategy, evaluation.query_set(spec).name,
                   f"strategy {strategy!r} failed: its Ray worker was lost, and the task with "
                   f"it after {RETRIES} restarts ({type(error).__name__})")


def _reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast on a wrong address: Ray itself retries an unreachable one for minutes."""
    import socket
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        if address == "auto":
            return
        raise ConfigError(f"--address {address}: expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: "
                          f"{e.strerror or e}") from None


class _Worker:
    """One actor: the project's modules imported again, the evaluation read once, and the
    tasks it is given."""

    def __init__(self, evaluation, modules):
        load_again(modules)
        self.evaluation = evaluation

    def run(self, task: Task, retrievers: list[str]):
        return task, self.evaluation.run_task(task, retrievers)


def load_again(modules: tuple[tuple[str, str, str], ...]) -> None:
    """Import and register the project's modules in a process of their own."""
    loaders = {"splitter": strategies.load_splitter, "retriever": retrieval.load_retriever,
               "length": _length, "strategy": lambda spec, root: strategies.get(spec)}
    for what, spec, root in modules:
        loaders[what](spec, root)


def _length(spec: str, root: str) -> None:
    length = outside.length_function(spec, root)
    strategies.size_by(spec, lambda: length)  # the strategies sized by it (fixed-400t)


def make(name: str, *, jobs: int, address: str | None = None, modules=()) -> Executor:
    """The executor named on the command line; `modules` as RayExecutor takes them."""
    if name == "process":
        if address:
            raise ConfigError("--address needs --executor ray")
        return ProcessPool(jobs)
    if name == "ray":
        return RayExecutor(address=address, workers=jobs, modules=tuple(modules))
    raise ConfigError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
