"""Time whole commands: wall time, CPU time and peak resident memory, medians of several runs.

    python bench/runs.py --repeat 3 --cwd PROJECT -- pytest -p no:cacheprovider
    python bench/runs.py --repeat 3 -- chunkeval run --out /tmp/r

Each run is a fresh process; its peak RSS is the largest of the process and the children it
waited for (wait4's rusage), so a pytest run with forked workers counts its biggest one, and
its CPU seconds are those of the process and its children.

The result and chunk caches (results and chunks reused across runs, under
$CHUNKEVAL_CACHE/results and chunks/) decide what a run costs, so their state is chosen:

    --warm (default)  run the command once untimed to fill the caches, then time it
    --cold            empty both before every timed run; parsed corpora,
                      downloaded packages and embeddings are kept, as a fresh checkout of a
                      project on a used machine has them

    python bench/runs.py --cold --repeat 3 --label cold -- chunkeval run --jobs 2 --out /tmp/r
    python bench/runs.py --warm --repeat 3 --label warm -- chunkeval run --jobs 2 --out /tmp/r
    python bench/runs.py --cold --repeat 3 -- python -m pytest -q -p no:randomly tests/test_regression.py

Point $CHUNKEVAL_CACHE at a folder of your own to leave a shared cache alone (--cold empties
its results/ and chunks/). Prints one line a run (with the one-minute load average when it ended) and a
median line; --json writes them too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def run_once(cmd: list[str], cwd: str | None) -> dict:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    return {"seconds": round(wall, 2), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "load": round(os.getloadavg()[0], 2),
            "exit": code, "stderr_tail": err.strip().splitlines()[-3:] if code else []}


def stored_runs() -> list[str]:
    """The result cache and the chunk cache: what a cold run makes afresh."""
    from chunkeval.store import CHUNKS, results_root
    return [str(results_root()), str(CHUNKS.root())]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cwd")
    p.add_argument("--label", default="")
    state = p.add_mutually_exclusive_group()
    state.add_argument("--cold", action="store_true",
                       help="empty the result and chunk caches before every run")
    state.add_argument("--warm", action="store_true",
                       help="fill the result cache with one untimed run first (the default)")
    p.add_argument("--json", metavar="FILE", help="append the runs and medians here (JSONL)")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("give the command after --")
    cache = "cold" if args.cold else "warm"
    if cache == "warm":
        fill = run_once(cmd, args.cwd)
        print(f"{args.label} filling the result cache: {fill['seconds']:.1f} s, "
              f"exit {fill['exit']}", flush=True)
    runs = []
    for i in range(args.repeat):
        if cache == "cold":
            for folder in stored_runs():
                shutil.rmtree(folder, ignore_errors=True)
        r = run_once(cmd, args.cwd)
        runs.append(r)
        print(f"{args.label} {cache} run {i + 1}: {r['seconds']:.1f} s, CPU {r['cpu_seconds']:.1f} s, "
              f"peak RSS {r['peak_rss_mb']:.0f} MB, load {r['load']:.1f}, exit {r['exit']}",
              flush=True)
        for line in r["stderr_tail"]:
            print(f"  {line}")
    median = {k: statistics.median(r[k] for r in runs)
              for k in ("seconds", "cpu_seconds", "peak_rss_mb", "load")}
    print(f"{args.label} {cache} median of {len(runs)}: {median['seconds']:.1f} s, "
          f"CPU {median['cpu_seconds']:.1f} s, peak RSS {median['peak_rss_mb']:.0f} MB, "
          f"load {median['load']:.1f}")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps({"label": args.label, "cache": cache, "cmd": cmd,
                                "cwd": args.cwd, "runs": runs, "median": median}) + "\n")
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
