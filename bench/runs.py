"""Time whole commands: wall time and peak resident memory, medians of several runs.

    python bench/runs.py --repeat 3 --cwd PROJECT -- pytest -p no:cacheprovider
    python bench/runs.py --repeat 3 -- chunkeval run --out /tmp/r

Each run is a fresh process; its peak RSS is the largest of the process and the children it
waited for (wait4's rusage), so a pytest run with forked workers counts its biggest one.
Prints one line a run and a median line; --json writes them too.
"""

from __future__ import annotations

import argparse
import json
import os
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
    return {"seconds": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "exit": code, "stderr_tail": err.strip().splitlines()[-3:] if code else []}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cwd")
    p.add_argument("--label", default="")
    p.add_argument("--json", metavar="FILE", help="append the runs and medians here (JSONL)")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("give the command after --")
    runs = []
    for i in range(args.repeat):
        r = run_once(cmd, args.cwd)
        runs.append(r)
        print(f"{args.label} run {i + 1}: {r['seconds']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB, "
              f"exit {r['exit']}", flush=True)
        for line in r["stderr_tail"]:
            print(f"  {line}")
    median = {"seconds": statistics.median(r["seconds"] for r in runs),
              "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs)}
    print(f"{args.label} median of {len(runs)}: {median['seconds']:.1f} s, "
          f"peak RSS {median['peak_rss_mb']:.0f} MB")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps({"label": args.label, "cmd": cmd, "cwd": args.cwd, "runs": runs,
                                "median": median}) + "\n")
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
