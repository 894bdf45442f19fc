"""Peak memory of a run where one large page holds many of the queries.

Scoring once kept, per query, arrays sized by its gold document rather than by its gold: a
700 KB changelog holding 170 of 800 questions took a run on a 155-page docs site to 2.3 GB
(0.4 GB with 100 questions). This benchmark builds that case on purpose. It writes a docs
folder (or takes yours with --corpus: Markdown or text files, the largest one the big page)
and a JSONL query file of --queries questions, --on-big of them on the big page and the rest
spread over the other pages; each answer is a stretch of about 300 characters of its page,
each question a few of its words. Then it runs

    chunkeval run --corpus DIR --queries FILE --strategies fixed-400 --retrievers bm25
                  --jobs 1 --no-result-cache

and `chunkeval corpus info` (the floor: parsing the corpus) in fresh processes with an empty
cache each, and prints the medians of --runs runs (peak RSS, wall and CPU seconds) per code
version. Several --code checkouts are measured in turn, run after run, so that the load of a
shared machine falls on each alike.

    python bench/memory.py --runs 3
    python bench/memory.py --corpus DOCS_DIR --code OLD_CHECKOUT --code .
    python bench/memory.py --gold spans   # positional gold, scored by position
    python bench/memory.py --corpus DOCS_DIR --set section-titles   # a built-in set instead
"""

from __future__ import annotations

import argparse
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
         "request response route model schema header cookie token query body field depend "
         "server client async await test deploy docker proxy worker config option command").split()
EMOJI = "📝 🐛 ✨ ♻️ 🔧 ⬆️ 🌐 👷 🔥 ✅".split()


def generated(folder: Path, pages: int, big_kb: int, seed: int = 0) -> None:
    """`pages` pages of about 8 KB of prose, and big.md: a changelog of `big_kb` KB, whose
    lines repeat the same few words and links, as release notes do."""
    rng = random.Random(seed)

    def sentence(k: int = 14) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    for p in range(pages):
        parts = [f"# Page {p} {rng.choice(WORDS)}\n"]
        while sum(map(len, parts)) < 8000:
            parts.append(f"## {rng.choice(WORDS).title()} {rng.choice(WORDS)} {len(parts)}\n")
            parts.append(" ".join(sentence() for _ in range(6)) + "\n")
        (folder / f"page-{p:03d}.md").write_text("\n".join(parts), encoding="utf-8")
    parts, version, pr = ["# Release Notes\n"], 0, 20000
    while sum(map(len, parts)) < big_kb * 1000:
        version += 1
        parts.append(f"## 0.{version}.0\n")
        for section in ("Features", "Fixes", "Docs", "Internal"):
            parts.append(f"### {section}\n")
            for _ in range(rng.randint(2, 6)):
                pr -= 1
                user = rng.choice(("tiangolo", "alejsdev", "YuriiMotov", "svlandeg"))
                parts.append(f"* {rng.choice(EMOJI)} {sentence(8)} PR "
                             f"[#{pr}](https://github.com/fastapi/fastapi/pull/{pr}) by "
                             f"[@{user}](https://github.com/{user}).")
            parts.append("")
    (folder / "big.md").write_text("\n".join(parts), encoding="utf-8")


def excerpts(text: str, n: int, rng: random.Random, size: int = 300) -> list[tuple[int, int]]:
    """n spans of about `size` characters, each from a line start to a line end."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n" and i + 1 < len(text)]
    out = []
    for a in rng.sample(starts, min(n, len(starts))):
        b = text.find("\n", a + size)
        b = len(text) if b < 0 else b
        if text[a:b].strip():
            out.append((a, b))
    return out


def query_file(folder: Path, path: Path, total: int, on_big: int, gold: str,
               seed: int = 0) -> dict:
    """The JSONL file: `on_big` questions on the largest page, the rest over the others."""
    rng = random.Random(seed)
    pages = sorted(p for p in folder.rglob("*") if p.suffix in (".md", ".markdown", ".txt"))
    big = max(pages, key=lambda p: p.stat().st_size)
    others = [p for p in pages if p != big]
    plan = {big: on_big}
    for i in range(total - on_big):
        plan[others[i % len(others)]] = plan.get(others[i % len(others)], 0) + 1
    lines = []
    for page, n in plan.items():
        text = page.read_text(encoding="utf-8").lstrip("\ufeff").replace("\r\n", "\n")
        doc = page.relative_to(folder).as_posix()
        for a, b in excerpts(text, n, rng):
            words = text[a:b].split()
            question = " ".join(rng.sample(words, min(6, len(words))))
            line = {"id": f"q{len(lines)}", "query": question, "doc": doc}
            line |= {"spans": [[a, b]]} if gold == "spans" else {"answer": text[a:b]}
            lines.append(json.dumps(line, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    name = big.relative_to(folder).as_posix()
    return {"big_page": name, "big_kb": big.stat().st_size // 1000, "pages": len(pages),
            "queries": len(lines), "on_big": sum(json.loads(s)["doc"] == name for s in lines)}


def measure(code: str, args: list[str]) -> dict:
    """One command in a child with an empty cache; peak RSS from its own rusage."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(code)}
    with tempfile.TemporaryDirectory() as cache:
        env["CHUNKEVAL_CACHE"] = cache
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "chunkeval.cli", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed: {err.decode()[-2000:]}")
    return {"peak_mb": usage.ru_maxrss / 1024, "seconds": seconds,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, help="a folder of Markdown pages (default: generated)")
    p.add_argument("--pages", type=int, default=154, help="generated pages besides the big one")
    p.add_argument("--big-kb", type=int, default=700, help="the generated big page's size")
    p.add_argument("--queries", type=int, default=800)
    p.add_argument("--on-big", type=int, default=170, help="questions on the big page")
    p.add_argument("--gold", choices=("answer", "spans"), default="answer")
    p.add_argument("--set", help="a built-in query set (section-titles, ...) instead of the "
                                 "generated file")
    p.add_argument("--max-queries", type=int, help="passed on to the run")
    p.add_argument("--strategies", default="fixed-400")
    p.add_argument("--retrievers", default="bm25")
    p.add_argument("--runs", type=int, default=3, help="runs per code version; medians")
    p.add_argument("--code", action="append", help="checkouts to measure (default: this one)")
    a = p.parse_args()
    codes = a.code or [str(Path(__file__).resolve().parent.parent)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.corpus or Path(tmp) / "docs"
        if a.corpus is None:
            folder.mkdir()
            generated(folder, a.pages, a.big_kb)
        queries = a.set or Path(tmp) / "queries.jsonl"
        if not a.set:
            print(json.dumps(query_file(folder, queries, a.queries, a.on_big, a.gold)), flush=True)
        limit = ["--max-queries", str(a.max_queries)] if a.max_queries else []
        commands = {
            "info": ["corpus", "info", "--corpus", str(folder)],
            "run": ["run", "--corpus", str(folder), "--queries", str(queries), "--strategies",
                    a.strategies, "--retrievers", a.retrievers, "--jobs", "1", *limit,
                    "--no-result-cache", "--out", str(Path(tmp) / "out")]}
        runs: dict[tuple[str, str], list[dict]] = {}
        for _ in range(a.runs):
            for what, args in commands.items():
                for code in codes:
                    runs.setdefault((code, what), []).append(measure(code, args))
        for (code, what), rs in runs.items():
            print(json.dumps({"code": code, "command": what, "runs": len(rs),
                              "peak_mb": round(statistics.median(r["peak_mb"] for r in rs)),
                              "seconds": round(statistics.median(r["seconds"] for r in rs), 2),
                              "cpu_s": round(statistics.median(r["cpu_s"] for r in rs), 2),
                              "peak_mb_runs": [round(r["peak_mb"]) for r in rs]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
