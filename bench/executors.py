"""Ray or Dask for `chunkeval run`: the same tasks on an embedded local cluster of each.

Each engine runs in its own process, several times, the engines taking turns: cluster
start-up, the run of every strategy x query set task (the evaluation shipped once per worker:
Ray's object store read once by one actor per worker, as chunkeval.executors does; Dask's
scatter to every worker), the whole wall time and the peak memory of the driver and every
process the cluster started (sampled). The process pool of `--jobs` is the yardstick. Medians
of --repeat runs; pip install dask[distributed] to run the Dask side.

    python bench/executors.py --repeat 3 --workers 2 --out bench-executors.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time

STRATEGIES = "fixed-400,recursive-400-ov40,structure-800,parent-child-r200-s800"


class PeakRSS:
    """Peak of the summed RSS of this process and all its descendants, sampled every 0.2 s."""

    def __init__(self):
        import psutil
        self.me, self.peak, self._stop = psutil.Process(), 0, threading.Event()

    def _sample(self):
        import psutil
        while not self._stop.is_set():
            total = 0
            for p in [self.me, *self.me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def dask_map(evaluation, tasks, rets, workers):
    """Dask's version of executors.RayExecutor.map: the evaluation scattered to every worker
    once, tasks handed out costliest first as workers free up."""
    from distributed import Client, LocalCluster, as_completed

    from chunkeval.executors import task_costs

    def run(evaluation, task):
        return evaluation.run_task(task, rets)

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    try:
        with Client(cluster) as client:
            # an evaluation pickles with its inputs only (Evaluation.__getstate__)
            shipped = client.scatter(evaluation, broadcast=True)
            cost = task_costs(evaluation, tasks)
            todo = iter(sorted(tasks, key=lambda t: -cost[t]))
            futures, running = {}, as_completed()

            def submit():
                task = next(todo, None)
                if task is not None:
                    future = client.submit(run, shipped, task, pure=False)
                    futures[future] = task
                    running.add(future)

            for _ in range(workers):
                submit()
            for future in running:
                yield futures[future], future.result()
                submit()
    finally:
        cluster.close()


def child(engine: str, workers: int, names: list[str], rets: list[str]) -> dict:
    from chunkeval.corpus import load_corpus
    from chunkeval.evaluate import Evaluation
    from chunkeval.executors import ProcessPool, RayExecutor

    evaluation = Evaluation(load_corpus("debian-ja"))
    specs = evaluation.query_specs
    for spec in specs:
        evaluation.query_set(spec)
    tasks = [(spec, name) for spec in specs for name in names]
    out = {"engine": engine, "workers": workers, "tasks": len(tasks)}
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        if engine == "process":
            evaluation.run(names, rets, progress=False, executor=ProcessPool(workers))
            out["startup_s"] = 0.0
        elif engine == "dask":
            from distributed import Client, LocalCluster
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
            Client(cluster).wait_for_workers(workers)
            out["startup_s"] = time.perf_counter() - t0
            cluster.close()
            t0 = time.perf_counter()  # dask_map starts its own cluster: time it whole
            list(dask_map(evaluation, tasks, rets, workers))
        else:
            import ray
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
            out["startup_s"] = time.perf_counter() - t0
            # the executor finds the cluster running and leaves it to us
            list(RayExecutor(workers=workers).map(evaluation, tasks, dict.fromkeys(names, rets)))
            ray.shutdown()
        out["wall_s"] = time.perf_counter() - t0
    out["peak_mb"] = round(rss.peak / 2**20)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engines", default="process,dask,ray")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--strategies", default=STRATEGIES)
    p.add_argument("--retrievers", default="bm25")
    p.add_argument("--out", help="also write the table as JSON here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    names, rets = a.strategies.split(","), a.retrievers.split(",")
    if a.child:
        print(json.dumps(child(a.child, a.workers, names, rets)))
        return 0
    engines = a.engines.split(",")
    runs: dict[str, list[dict]] = {e: [] for e in engines}
    # Engines take turns, so that a shared machine's changing load falls on all of them.
    for i in range(a.repeat):
        for engine in engines:
            done = subprocess.run([sys.executable, __file__, "--child", engine, "--workers",
                                   str(a.workers), "--strategies", a.strategies,
                                   "--retrievers", a.retrievers],
                                  capture_output=True, text=True, env=os.environ)
            if done.returncode != 0:
                sys.exit(f"{engine} failed:\n{done.stderr[-3000:]}")
            run = json.loads(done.stdout.strip().splitlines()[-1])
            runs[engine].append(run)
            print(f"run {i + 1} {engine}: start-up {run['startup_s']:.1f} s, wall "
                  f"{run['wall_s']:.1f} s, peak {run['peak_mb']} MB", flush=True)
    table = []
    for engine in engines:
        rs = runs[engine]
        row = {"engine": engine, "workers": a.workers, "tasks": rs[0]["tasks"], "runs": rs,
               **{k: round(statistics.median(r[k] for r in rs), 2)
                  for k in ("startup_s", "wall_s", "peak_mb")}}
        table.append(row)
        print(f"{engine:<8} start-up {row['startup_s']:6.1f} s  wall {row['wall_s']:6.1f} s  "
              f"peak {row['peak_mb']:6.0f} MB  (median of {len(rs)})", flush=True)
    if a.out:
        from chunkeval.store import atomic_write
        atomic_write(a.out, json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
