"""Wall time and peak RSS of the main job (`chunkeval run`), with a cold and a warm
embedding cache.

The corpus stays cached (its packages and parse are copied into a fresh cache directory),
so "cold" means: no embedding computed before. Each run is a separate process; the warm
runs reuse the embeddings the cold run wrote.

    python bench/main_job.py [--runs 2] [-- chunkeval run options...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chunkeval.store import cache_root


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, peak RSS of the child in MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="warm runs (default 2)")
    parser.add_argument("rest", nargs="*", help="options for chunkeval run (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunkeval-bench-") as tmp:
        cache = Path(tmp) / "cache"
        for part in ("debs", "corpus"):
            if (cache_root() / part).is_dir():
                shutil.copytree(cache_root() / part, cache / part)
        env = {**os.environ, "CHUNKEVAL_CACHE": str(cache)}
        cmd = [sys.executable, "-m", "chunkeval.cli", "run", "--out", str(Path(tmp) / "out"),
               *args.rest]
        cold, cold_rss = timed(cmd, env)
        print(f"cold: {cold:.1f} s wall, peak RSS {cold_rss:.0f} MB")
        warm = [timed(cmd, env)[0] for _ in range(args.runs)]
        print(f"warm: median {statistics.median(warm):.1f} s wall over {len(warm)} runs "
              f"({', '.join(f'{w:.1f}' for w in warm)})")


if __name__ == "__main__":
    main()
