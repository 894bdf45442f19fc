"""The test suite's time as a fresh clone sees it: `pytest -n 2` with an empty chunkeval cache
that holds only the downloaded Debian packages (what `chunkeval corpus fetch` leaves; CI
fetches them before the tests), so every parse, chunking, embedding and result is computed.

Prints one JSON line: wall seconds, the CPU seconds of pytest and its workers, the load
average before and after (the machine may be shared), pytest's exit code, its slowest items
by wall time, and the 15 items that took most CPU seconds (setup, call and teardown summed,
by bench/suite_cpu.py: these hold still when other work shares the machine, wall times do
not); each process's CPU seconds before its first item and after its last ([before, after];
"main" is the controller, all of whose own time is outside the items), and the tail: how long
after one worker's last item the other's ended; and each process's CPU seconds in its cyclic
garbage collector, by generation. `--warm` runs again on the cache the first run filled.

    python bench/suite_time.py [--warm] [-- PYTEST_ARGS...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chunkeval.store import cache_root

ROOT = Path(__file__).resolve().parents[1]


def fresh_cache(into: Path) -> Path:
    """A chunkeval cache holding the packages of the shared one and nothing else."""
    debs = cache_root() / "debs"
    if not any(debs.glob("*.deb")):
        sys.exit(f"no packages under {debs}: run `chunkeval corpus fetch` (and --corpus "
                 "debian-en) first")
    (into / "debs").mkdir(parents=True)
    for deb in debs.glob("*.deb"):
        shutil.copy2(deb, into / "debs" / deb.name)
    return into


def item_cpu(out: str) -> tuple[float, list[str]]:
    """The CPU seconds of all items and the 15 costliest, from suite_cpu.py's files."""
    per_item: dict[str, float] = {}
    for path in glob.glob(f"{out}.*.jsonl"):
        with open(path, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                per_item[row["item"]] = per_item.get(row["item"], 0.0) + row["cpu_s"]
    slowest = sorted(per_item.items(), key=lambda kv: -kv[1])[:15]
    return sum(per_item.values()), [f"{cpu:.1f}s {item}" for item, cpu in slowest]


def outside_items(out: str) -> dict:
    """Each process's CPU seconds before its first item and after its last, and how long
    the worker that ran out of items first waited for the last one (the run's tail)."""
    processes = [json.loads(Path(path).read_text(encoding="utf-8"))
                 for path in sorted(glob.glob(f"{out}.*.outside.json"))]
    ended = [p["last_item_ended"] for p in processes if p["last_item_ended"] is not None]
    return {"outside_items_cpu_s": {p["process"]: [p["before_items_s"], p["after_items_s"]]
                                    for p in processes},
            "tail_s": round(max(ended) - min(ended), 1) if len(ended) > 1 else None,
            "collector_cpu_s": {p["process"]: p.get("collector_s") for p in processes}}


def run_suite(cache: Path, args: list[str]) -> dict:
    out = str(cache.parent / f"cpu-{time.time_ns()}")
    # the plugin beside this file, for the workers too; LangSmith's is blocked as tox.ini does
    path = os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "bench"),
                                         os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "CHUNKEVAL_CACHE": str(cache), "SUITE_CPU_OUT": out,
           "PYTHONPATH": path}
    before = os.getloadavg()
    start = time.perf_counter()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider",
                           "-p", "no:langsmith_plugin", "-p", "suite_cpu", "--durations=15", "-rfE",
                           *args], cwd=ROOT, env=env, text=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    slowest = re.findall(r"^(\d+\.\d+)s (\w+) +(\S+)$", proc.stdout, re.M)
    tail = proc.stdout.strip().splitlines()[-1:] or [proc.stderr.strip()[-300:]]
    items_cpu, costliest = item_cpu(out)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "items_cpu_s": round(items_cpu, 1),
            **outside_items(out), "exit": proc.returncode,
            "load_before": [round(x, 2) for x in before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "summary": tail[0],
            "slowest": [f"{s}s {when} {item}" for s, when, item in slowest],
            "most_cpu": costliest,
            "failed": re.findall(r"^(?:FAILED|ERROR) (.+)$", proc.stdout, re.M)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true",
                        help="run a second time on the cache the first filled")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        cache = fresh_cache(Path(tmp) / "cache")
        print(json.dumps({"cache": "fresh", **run_suite(cache, opts.pytest_args)}), flush=True)
        if opts.warm:
            print(json.dumps({"cache": "warm", **run_suite(cache, opts.pytest_args)}))


if __name__ == "__main__":
    main()
