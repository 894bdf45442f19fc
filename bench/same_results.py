"""Do two runs measure the same thing? Compares two results.json files, or two baseline
folders, and lists every difference.

results.json: equal but for what a run's machine and cache decide - each result's timings
(`seconds`), embedding counters, `reused`, and the top-level `embeddings` and `result_cache`
counts. Baselines: every file byte for byte (a baseline holds no timing).

    python bench/same_results.py OLD/results.json NEW/results.json   (or the two folders)
    python bench/same_results.py --baselines OLD/baselines NEW/baselines

Used to show that a change of code layout changed no number: run `chunkeval run
--no-result-cache` (and `pytest --update-baselines`) on the code before and after.
Exit status 0 when equal, 1 when not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# What differs between two runs of the same code: where and when they ran.
RUN_ONLY = {"seconds", "embeddings", "reused", "result_cache"}


def _without_run_only(x):
    if isinstance(x, dict):
        return {k: _without_run_only(v) for k, v in x.items() if k not in RUN_ONLY}
    if isinstance(x, list):
        return [_without_run_only(v) for v in x]
    return x


def compare_results(old: Path, new: Path) -> list[str]:
    a, b = (_without_run_only(json.loads(p.read_text(encoding="utf-8"))) for p in (old, new))
    out = [f"top-level {k!r} differs" for k in sorted(set(a) | set(b))
           if k != "results" and a.get(k) != b.get(k)]
    rows_a = {(r["strategy"], r["retriever"], r["query_set"]): r for r in a.get("results", [])}
    rows_b = {(r["strategy"], r["retriever"], r["query_set"]): r for r in b.get("results", [])}
    for key in sorted(set(rows_a) | set(rows_b)):
        ra, rb = rows_a.get(key), rows_b.get(key)
        if ra is None or rb is None:
            out.append(f"{'|'.join(key)}: only in {'new' if ra is None else 'old'}")
        elif ra != rb:
            fields = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
            out.append(f"{'|'.join(key)}: {', '.join(fields)} differ")
    if [list(k) for k in rows_a] != [list(k) for k in rows_b] and set(rows_a) == set(rows_b):
        out.append("the results are listed in another order")
    return out


def compare_baselines(old: Path, new: Path) -> list[str]:
    names = sorted({p.name for p in old.glob("*.json")} | {p.name for p in new.glob("*.json")})
    out = []
    for name in names:
        a, b = old / name, new / name
        if not a.is_file() or not b.is_file():
            out.append(f"{name}: only in {'new' if not a.is_file() else 'old'}")
        elif a.read_bytes() != b.read_bytes():
            ea, eb = (json.loads(p.read_text(encoding="utf-8"))["entries"] for p in (a, b))
            changed = sorted(k for k in set(ea) | set(eb) if ea.get(k) != eb.get(k))
            out.append(f"{name}: differs" + (f" in {len(changed)} entries, e.g. {changed[0]}"
                                             if changed else " outside the entries"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--baselines", action="store_true",
                        help="OLD and NEW are baseline folders")
    args = parser.parse_args()
    if not args.baselines:
        # a run's output folder stands for the results.json in it
        args.old, args.new = (p / "results.json" if p.is_dir() else p for p in (args.old, args.new))
    for p in (args.old, args.new):
        if not p.exists() or (args.baselines and not p.is_dir()):
            parser.error(f"{p}: no such {'folder' if args.baselines else 'file'}")
    found = (compare_baselines if args.baselines else compare_results)(args.old, args.new)
    for line in found:
        print(line)
    print("equal" if not found else f"{len(found)} difference(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
