"""How `chunkeval corpus info` grows with the size of one document.

Writes a corpus directory holding one generated HTML page of each size (sections with unique
titles, FAQ-style question headings, paragraphs, tables and code), then times `chunkeval
corpus info` on it: parsing plus building every query set. Each run is its own process with
an empty cache, so its time and peak memory are its own; the medians of --runs runs (wall and CPU
seconds, peak RSS) are printed as one JSON line per size. On a shared machine the CPU
seconds are the steadier measure.

    python bench/big_document.py --sizes 1,10,50 --runs 3
    python bench/big_document.py --code OLD_CHECKOUT   # the same on another version's code
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("system value file list page data mode step rule path user note part item form "
         "kernel package mirror archive release source binary build install config network "
         "service daemon socket shell script filter option command manual editor").split()


def page(megabytes: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Big</title></head><body>",
           "<h1>One big manual</h1>"]
    size, n = 0, 0

    def para(k: int = 40) -> str:
        return "<p>" + " ".join(rng.choice(WORDS) for _ in range(k)) + ".</p>"

    while size < target:
        n += 1
        parts = [f"<h2>Topic {n} {rng.choice(WORDS)} {rng.choice(WORDS)}</h2>", para(), para()]
        if n % 4 == 0:
            parts += [f"<h3>How do I set up the {rng.choice(WORDS)} of part {n}?</h3>", para()]
        if n % 7 == 0:
            rows = "".join(f"<tr><td>{rng.choice(WORDS)}-{r}</td><td>{rng.choice(WORDS)}</td></tr>"
                           for r in range(5))
            parts.append(f"<table>{rows}</table>")
        if n % 9 == 0:
            code = "\n".join(f"{rng.choice(WORDS)}_{i} = {i}" for i in range(5))
            parts.append(f"<pre>{html.escape(code)}</pre>")
        chunk = "\n".join(parts)
        out.append(chunk)
        size += len(chunk)
    out.append("</body></html>")
    return "\n".join(out)


def chunkeval_command(code: str | None) -> tuple[list[str], dict]:
    env = {**os.environ}
    if code:
        env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    return [sys.executable, "-c", "import sys; from chunkeval.cli import main; "
                                  "sys.exit(main(sys.argv[1:]))"], env


def supports_limit(code: str | None) -> bool:
    """Versions before the document size limit have no --max-document-mb."""
    cmd, env = chunkeval_command(code)
    shown = subprocess.run([*cmd, "corpus", "info", "--help"], env=env, capture_output=True,
                           text=True).stdout
    return "--max-document-mb" in shown


def measure(corpus: Path, code: str | None) -> dict:
    """One run in a child whose peak RSS we read from its own rusage."""
    cmd, env = chunkeval_command(code)
    with tempfile.TemporaryDirectory() as cache:
        env["CHUNKEVAL_CACHE"] = cache
        t0 = time.perf_counter()
        limit = ["--max-document-mb", "1000"] if supports_limit(code) else []
        proc = subprocess.Popen([*cmd, "corpus", "info", "--corpus", str(corpus), "--json", *limit],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = proc.stdout.read()
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"corpus info failed (status {status}): {err.decode()[-2000:]}")
    info = json.loads(out)
    return {"seconds": seconds, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,
            "queries": info["queries"], "chars": info["chars"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,10,50", help="document sizes in MB (default 1,10,50)")
    p.add_argument("--runs", type=int, default=3, help="runs per size; medians (default 3)")
    p.add_argument("--code", help="a checkout whose chunkeval package to measure instead")
    args = p.parse_args()
    for mb in [float(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "big"
            corpus.mkdir()
            (corpus / "big.html").write_text(page(mb), encoding="utf-8")
            runs = [measure(corpus, args.code) for _ in range(args.runs)]
        print(json.dumps({"mb": mb, "runs": len(runs),
                          "seconds": round(statistics.median(r["seconds"] for r in runs), 2),
                          "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 2),
                          "peak_mb": round(statistics.median(r["peak_mb"] for r in runs)),
                          "chars": runs[0]["chars"], "queries": runs[0]["queries"],
                          "code": args.code or "this checkout"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
