"""Time and memory against corpus size on real text: the Debian Administrator's Handbook.

The `debian-handbook` package holds the book as HTML in 26 languages. This script fetches it
with `apt-get download` into the chunkeval cache (never into the repository), unpacks each
language's chapters into cache_root()/bench/debian-handbook-<version>/<language>/, and
measures sizes that are multiples of the seed's 6.39M characters:

- 1x and 3x: the smallest set of languages (in a fixed order) with at least that many
  characters;
- 10x: the whole handbook (all 26 languages together, 24.9M characters) repeated under new
  document ids until it has that many characters (the last copy cut short).

Queries are section titles (up to 800, seed 0) built on each language subset, and on the whole
handbook for the repeated sizes (their answers are then present once per copy). Each size
runs in its own process, one strategy at a time (--jobs 1), so its peak RSS is the whole
run's; wall time covers building the query set, splitting, indexing and searching. The curve
goes to --out as JSON and a Markdown table.

    nice python bench/handbook_scale.py --sizes 1,3,10 --out bench-handbook
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEED_CHARS = 6_390_000
PACKAGE = "debian-handbook"
STRATEGIES = "fixed-400,recursive-400-ov40,structure-800,parent-child-r200-s800"
# Subsets take languages in this order: English first (the original), then by code.
FIRST = "en-US"


def download(package: str, debs: Path) -> Path:
    """The newest `package` .deb in `debs`, fetched there with `apt-get download` first when
    there is none."""
    found = sorted(debs.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=debs))
    try:
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True,
                       capture_output=True, text=True)
        for deb in tmp.glob("*.deb"):
            deb.rename(debs / deb.name)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"apt-get download {package} failed ({getattr(e, 'stderr', '') or e}); "
                 "run `apt-get update` first on a fresh machine")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sorted(debs.glob(f"{package}_*.deb"))[-1]


def fetch() -> Path:
    """The handbook's HTML, unpacked under the cache; downloaded once."""
    from chunkeval.store import cache_root
    debs = cache_root() / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    deb = download(PACKAGE, debs)
    version = deb.stem.split("_")[1]
    root = cache_root() / "bench" / f"{PACKAGE}-{version}"
    if root.is_dir():
        return root
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root.parent if root.parent.exists()
                                else _mkdir(root.parent)))
    try:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        html = tmp / "usr" / "share" / "doc" / PACKAGE / "html"
        out = tmp / "languages"
        for lang in sorted(p for p in html.iterdir() if p.is_dir()):
            (out / lang.name).mkdir(parents=True)
            for page in lang.glob("*.html"):
                shutil.copyfile(page, out / lang.name / page.name)
        out.rename(root)  # whole or not at all
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def languages(root: Path) -> list[str]:
    langs = sorted(p.name for p in root.iterdir() if p.is_dir())
    return sorted(langs, key=lambda lang: (lang != FIRST, lang))


def corpus_of(root: Path, multiple: float):
    """(corpus, query set, description) of about `multiple` x the seed's characters."""
    from dataclasses import replace

    from chunkeval.corpus import load_corpus
    from chunkeval.model import Corpus, QuerySet
    from chunkeval.queries import build_query_set

    whole = load_corpus(str(root), progress=False)
    target = multiple * SEED_CHARS
    by_lang: dict[str, list] = {}
    for d in whole.documents:
        by_lang.setdefault(d.id.split("/")[0], []).append(d)
    docs, chars, used = [], 0, []
    for lang in languages(root):
        if chars >= target:
            break
        docs += by_lang.get(lang, [])
        chars += sum(len("".join(d.text.split())) for d in by_lang.get(lang, []))
        used.append(lang)
    if chars >= target:
        corpus = Corpus(f"handbook-{len(used)}-languages", tuple(docs))
        return corpus, build_query_set(corpus, "section-titles"), f"{len(used)} languages"
    # The whole handbook, then copies of it under new ids, the last one cut at the target.
    qs = build_query_set(whole, "section-titles")
    docs, chars, copies = list(qs.view.documents), qs.view.chars, 1
    while chars < target:
        copies += 1
        for d in qs.view.documents:
            if chars >= target:
                break
            docs.append(replace(d, id=f"copy-{copies}/{d.id}"))
            chars += len("".join(d.text.split()))
    view = Corpus(f"handbook-x{chars / qs.view.chars:.1f}", tuple(docs))
    return (view, QuerySet(qs.name, qs.queries, view),
            f"whole handbook x{chars / qs.view.chars:.2f}")


def child(root: Path, multiple: float, names: list[str], rets: list[str]) -> dict:
    from chunkeval.evaluate import Evaluation

    t0 = time.perf_counter()
    corpus, qs, what = corpus_of(root, multiple)
    t1 = time.perf_counter()
    cpu0 = _cpu()
    doc = Evaluation(corpus, query_specs=[qs]).run(names, rets, progress=False)
    t2 = time.perf_counter()
    phases = {"split": 0.0, "index": 0.0, "search": 0.0}
    seen = set()
    for r in doc.results:
        phases["index"] += r.seconds.index
        phases["search"] += r.seconds.search
        if r.strategy not in seen:  # every retriever's entry repeats the split seconds
            seen.add(r.strategy)
            phases["split"] += r.seconds.split
    return {"multiple": multiple, "what": what, "documents": len(corpus), "chars": corpus.chars,
            "queries": len(qs), "load_s": round(t1 - t0, 1), "evaluate_s": round(t2 - t1, 1),
            "phases_s": {k: round(v, 1) for k, v in phases.items()},
            "recall": {f"{r.strategy} {r.retriever}": round(r.metrics["recall_at_k"].value, 4)
                       for r in doc.results},
            "cpu_s": round(_cpu() - cpu0, 1),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _cpu() -> float:
    """CPU seconds of this process: on a shared machine wall time also counts the others."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def table(rows: list[dict]) -> str:
    first = rows[0]
    lines = ["| size | corpus | chars | queries | evaluate s (CPU s) | split / index / search s | "
             "peak RSS MB | time vs first | chars vs first |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["phases_s"]
        lines.append(f"| {r['multiple']:g}x | {r['what']} | {r['chars']:,} | {r['queries']} | "
                     f"{r['evaluate_s']} ({r.get('cpu_s', '-')}) | {p['split']} / {p['index']} / "
                     f"{p['search']} | {r['peak_mb']:,} | "
                     f"x{r['evaluate_s'] / first['evaluate_s']:.1f} | "
                     f"x{r['chars'] / first['chars']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,3,10", help="multiples of 6.39M chars (default 1,3,10)")
    p.add_argument("--strategies", default=STRATEGIES)
    p.add_argument("--retrievers", default="bm25,lsa")
    p.add_argument("--out", default="bench-handbook", metavar="DIR",
                   help="where curve.json and curve.md go")
    p.add_argument("--child", type=float, help=argparse.SUPPRESS)
    a = p.parse_args()
    names, rets = a.strategies.split(","), a.retrievers.split(",")
    root = fetch()
    if a.child:
        print(json.dumps(child(root, a.child, names, rets)))
        return 0
    from chunkeval.store import atomic_write
    rows = []
    for m in [float(x) for x in a.sizes.split(",")]:
        done = subprocess.run([sys.executable, __file__, "--child", str(m), "--strategies",
                               a.strategies, "--retrievers", a.retrievers],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"size {m:g}x failed:\n{done.stderr[-3000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{m:g}x: {r['what']}, {r['documents']} docs, {r['chars']:,} chars, "
              f"{r['queries']} queries, load {r['load_s']} s, evaluate {r['evaluate_s']} s "
              f"{r['phases_s']}, peak {r['peak_mb']} MB", flush=True)
        # written after every size, so a run stopped early keeps what it measured
        out = Path(a.out)
        atomic_write(out / "curve.json", json.dumps(rows, indent=1) + "\n")
        atomic_write(out / "curve.md", table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
