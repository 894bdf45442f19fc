"""The R manuals as PDF and as HTML, side by side: what the PDF reader recovers, and a run on
both editions with the page metrics beside the span metrics.

Debian's `r-doc-pdf` and `r-doc-html` hold the same seven manuals (R-FAQ, R-admin, R-data,
R-exts, R-intro, R-ints, R-lang) typeset by TeX and converted to HTML by texinfo. This script
fetches both with `apt-get download` into the chunkeval cache (never into the repository),
copies the seven manuals of each into cache_root()/bench/r-manuals-<version>/{pdf,html}/
(the reference manual, refman.pdf, is not one of them), and for each edition reports:

- documents, non-space characters, blocks by kind, blocks with a page (PDF), pages;
- the query sets the builders make (FAQ questions from headings, section titles);
- parse time without the cache (median of --repeat runs, in one process);
- where each table the PDF reader finds sits in the HTML edition (a table, a definition
  list, code, or running prose: a false table), found by its first row's first two cells;
- `chunkeval run` of --strategies with bm25 (one job): Recall@5, budget recall, doc hit@5,
  and on the PDF edition page hit@5 and the pages the 2,000-character budget hands over.

    nice python bench/r_manuals.py --out bench/results/r-manuals.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from handbook_scale import download  # beside this script

PACKAGES = {"pdf": "r-doc-pdf", "html": "r-doc-html"}
MANUALS = ("R-FAQ", "R-admin", "R-data", "R-exts", "R-intro", "R-ints", "R-lang")
STRATEGIES = "fixed-200,fixed-800,recursive-400-ov40,structure-800"


def fetch() -> tuple[str, dict[str, Path]]:
    """The package version and the folder of each edition's seven manuals."""
    from chunkeval.store import cache_root
    debs = cache_root() / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    got = {edition: download(pkg, debs) for edition, pkg in PACKAGES.items()}
    version = got["pdf"].stem.split("_")[1]
    root = cache_root() / "bench" / f"r-manuals-{version}"
    if not root.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root.parent))
        try:
            for edition, deb in got.items():
                subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "x")], check=True)
                (tmp / "out" / edition).mkdir(parents=True)
                for name in MANUALS:
                    page = tmp / "x" / "usr/share/R/doc/manual" / f"{name}.{edition}"
                    shutil.copyfile(page, tmp / "out" / edition / page.name)
            (tmp / "out").rename(root)  # whole or not at all
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return version, {edition: root / edition for edition in PACKAGES}


def describe(folder: Path, repeat: int) -> dict:
    from chunkeval.corpus import load_corpus
    from chunkeval.queries import build_query_set
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        corpus = load_corpus(str(folder), use_cache=False, progress=False)
        times.append(time.perf_counter() - start)
    load_corpus(str(folder), progress=False)  # into the parse cache, which the run then reads
    blocks = [b for d in corpus.documents for b in d.blocks]
    # The HTML edition's function and concept indexes are tables of links; the PDF's are
    # dot-leader lines, which the reader drops as a table of contents.
    indexes = sum(len("".join(d.block_text(b).split())) for d in corpus.documents
                  for b in d.blocks if "index" in (b.headings[1] + b.headings[2]).lower())
    built = {name: build_query_set(corpus, name) for name in ("faq-headings", "section-titles")}
    sets = {name: len(qs) for name, qs in built.items()}
    texts = {name: sorted(q.text for q in qs.queries) for name, qs in built.items()}
    return {"documents": len(corpus), "chars": corpus.chars, "index_chars": indexes,
            "blocks": dict(sorted(Counter(b.kind for b in blocks).items())),
            "with_page": sum(1 for b in blocks if b.page), "all_blocks": len(blocks),
            "pages": sum(max((b.page for b in d.blocks), default=0) for d in corpus.documents),
            "problems": [str(p) for p in corpus.problems], "queries": sets,
            "query_texts": texts,
            "parse_seconds": statistics.median(times), "repeat": repeat}


def _squeezed(text: str) -> str:
    # the PDF's text layer splits ligatures ("fi" read as "fifi"): compare letters and digits
    return "".join(c for c in text.lower().replace("fifi", "fi").replace("flfl", "fl")
                   .replace("ffff", "ff") if c.isalnum())


def tables(pdf_folder: Path, html_folder: Path) -> dict:
    """The PDF's tables, each looked up in the HTML edition of its manual: the kind of the
    HTML block holding its first row's first two cells."""
    from chunkeval.corpus import load_corpus
    pdf = load_corpus(str(pdf_folder), progress=False)
    html = load_corpus(str(html_folder), progress=False)
    found: Counter = Counter()
    examples: dict[str, list[str]] = {}
    for doc in pdf.documents:
        other = html[doc.id.replace(".pdf", ".html")]
        blocks = [(b.kind, _squeezed(other.block_text(b))) for b in other.blocks]
        for b in doc.blocks:
            if b.kind != "table":
                continue
            start, end = b.rows[0]
            cells = [_squeezed(c) for c in doc.text[start:end].split(" | ")][:2]
            kinds = [k for k, text in blocks if all(c in text for c in cells)]
            kind = next((k for k in ("table", "dl") if k in kinds), kinds[0] if kinds
                        else "not found")
            found[kind] += 1
            examples.setdefault(kind, []).append(f"{doc.id} p.{b.page}: "
                                                 f"{doc.text[start:end][:70]}")
    html_tables = sum(1 for d in html.documents for b in d.blocks if b.kind == "table")
    index_tables = sum(1 for d in html.documents for b in d.blocks if b.kind == "table" and (
        "index" in (b.headings[1] + b.headings[2]).lower()
        or d.block_text(b).startswith("Jump to")))
    return {"pdf": sum(found.values()), "html": html_tables, "html_indexes": index_tables,
            "found_as": dict(found), "examples": {k: v[:5] for k, v in examples.items()}}


def run(folder: Path, out: Path, strategies: str) -> dict:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "chunkeval", "run", "--corpus", str(folder),
                    "--strategies", strategies, "--retrievers", "bm25", "--jobs", "1",
                    "--out", str(out)], check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows: dict = {}
    for r in results["results"]:
        m = r["metrics"]
        rows.setdefault(r["query_set"], {})[r["strategy"]] = {
            name: m[name]["value"] for name in ("recall_at_k", "budget_recall", "doc_hit_at_k",
                                                "page_hit_at_k", "budget_pages") if name in m}
    return {"rows": rows, "seconds": seconds}


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def markdown(version: str, facts: dict, runs: dict, strategies: str) -> str:
    pdf, html = facts["pdf"], facts["html"]
    ratio = pdf["chars"] / html["chars"] - 1
    outside = (pdf["chars"] - pdf["index_chars"]) / (html["chars"] - html["index_chars"]) - 1
    kinds = sorted(set(pdf["blocks"]) | set(html["blocks"]))
    lines = [
        "# The R manuals: PDF and HTML editions side by side",
        "",
        f"`python bench/r_manuals.py`: Debian's `r-doc-pdf` and `r-doc-html` {version}, the "
        f"seven manuals ({', '.join(MANUALS)}). Two shared CPUs"
        + (f", load average {facts['load']} while measured." if facts.get("load") else "."),
        "",
        "| | PDF (`r-doc-pdf`) | HTML (`r-doc-html`) |",
        "|---|---:|---:|",
        f"| documents | {pdf['documents']} | {html['documents']} |",
        f"| non-space characters | {pdf['chars']:,} ({ratio:+.1%}) | {html['chars']:,} |",
        f"| non-space characters outside the indexes | {pdf['chars'] - pdf['index_chars']:,} "
        f"({outside:+.1%}) | {html['chars'] - html['index_chars']:,} |",
        f"| pages | {pdf['pages']:,} | - |",
        f"| blocks with a page | {pdf['with_page']:,} of {pdf['all_blocks']:,} | - |",
        f"| FAQ questions (faq-headings) | {pdf['queries']['faq-headings']} | "
        f"{html['queries']['faq-headings']} |",
        f"| section titles (section-titles) | {pdf['queries']['section-titles']} | "
        f"{html['queries']['section-titles']} |",
        *[f"| {name}: the same query text in both | "
          f"{len(set(pdf['query_texts'][name]) & set(html['query_texts'][name]))} | |"
          for name in ("faq-headings", "section-titles")],
        f"| problems reported | {len(pdf['problems'])} | {len(html['problems'])} |",
        f"| parse, no cache (s, median of {pdf['repeat']}) | {pdf['parse_seconds']:.1f} | "
        f"{html['parse_seconds']:.1f} |",
    ]
    lines += [f"| {kind} blocks | {pdf['blocks'].get(kind, 0):,} | {html['blocks'].get(kind, 0):,} |"
              for kind in kinds]
    t = facts.get("tables")
    if t:
        shown = ", ".join(f"{kind} {n}" for kind, n in sorted(t["found_as"].items()))
        lines += ["", f"Tables: the PDF reader finds {t['pdf']} (ruled or by aligned columns); the "
                      f"HTML edition has {t['html']}, {t['html_indexes']} of them its indexes' "
                      f"tables of links (the PDF's indexes are dot-leader lines), so "
                      f"{t['html'] - t['html_indexes']} outside them. Where the PDF's tables sit "
                      f"in the HTML edition (the block holding a table's first row): {shown}.",
                  ""]
        lines += [f"- {kind}: " + "; ".join(f"`{e}`" for e in t["examples"][kind][:3])
                  for kind in sorted(t["examples"])]
    lines += ["", f"`chunkeval run --strategies {strategies} --retrievers bm25` on each edition "
                  "(k = 5, budget 2,000 characters). Percent, but pages in budget: the mean "
                  "number of pages the chunks within the budget come from.", ""]
    for qs in ("faq-headings", "section-titles"):
        lines += [f"**{qs}**", "",
                  "| strategy | R@5 PDF | R@5 HTML | budget PDF | budget HTML | doc hit PDF | "
                  "doc hit HTML | page hit@5 PDF | pages in budget PDF |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in strategies.split(","):
            p = runs["pdf"]["rows"].get(qs, {}).get(s, {})
            h = runs["html"]["rows"].get(qs, {}).get(s, {})
            pages = p.get("budget_pages")
            lines.append(f"| {s} | {_pct(p.get('recall_at_k'))} | {_pct(h.get('recall_at_k'))} | "
                         f"{_pct(p.get('budget_recall'))} | {_pct(h.get('budget_recall'))} | "
                         f"{_pct(p.get('doc_hit_at_k'))} | {_pct(h.get('doc_hit_at_k'))} | "
                         f"{_pct(p.get('page_hit_at_k'))} | "
                         f"{'-' if pages is None else f'{pages:.1f}'} |")
        lines.append("")
    lines += [
        "Reading the figures:",
        "",
        "- The characters the PDF edition lacks are almost all the HTML edition's function and "
        "concept indexes (tables of links there, dot-leader lines in the PDF, which the reader "
        "drops as a table of contents); outside them the editions are within a few percent. "
        "Running headers, page numbers and the tables of contents are dropped from the PDF.",
        "- The builders find nearly the same questions and titles in both (the rows 'the same "
        "query text'; the PDF sets some words in small capitals, 'S-Plus' for 'S-PLUS'): "
        "headings come from the PDF's outline (bookmarks: chapters, sections, subsections; "
        "the title above them); the HTML edition's fourth level (subsubsections) has no "
        "bookmark, so fewer heading4 blocks.",
        "- Tables without rules are found by their aligned columns. texinfo's `@table` "
        "entries whose term and description share a line read as two-column tables (the "
        "HTML edition draws them as definition lists); code whose comments line up stays "
        "code unless the comment is set in a proportional font (the 'pre' row above). The "
        "HTML edition's other tables are mostly layout around code (two listings side by "
        "side, boxed examples), which the PDF draws as code.",
        "- Otherwise structure the PDF does not draw is not recovered: a texinfo `@table` "
        "term on a line of its own has no mark, so no `dl`; a list item is only a line that "
        "starts with a bullet or a number.",
        "- page hit@5 is below doc hit@5: a chunk of the right manual often lies on another "
        "page than the answer. Small chunks send a reader to many more pages for the same "
        "budget.",
        "",
    ]
    problems = pdf["problems"] + html["problems"]
    if problems:
        lines += ["Problems reported:", ""] + [f"- {p}" for p in problems] + [""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results/r-manuals.md")
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--repeat", type=int, default=3, help="parse runs (median)")
    ap.add_argument("--load", help="the load average measured under, said beside the times")
    ap.add_argument("--render", action="store_true",
                    help="only write the Markdown again from the JSON beside --out")
    args = ap.parse_args()
    if args.render:
        data = json.loads(Path(args.out).with_suffix(".json").read_text(encoding="utf-8"))
        version, facts, runs = data["version"], data["facts"], data["runs"]
    else:
        version, folders = fetch()
        facts = {edition: describe(folder, args.repeat) for edition, folder in folders.items()}
        facts["tables"] = tables(folders["pdf"], folders["html"])
        with tempfile.TemporaryDirectory() as tmp:
            runs = {edition: run(folder, Path(tmp) / edition, args.strategies)
                    for edition, folder in folders.items()}
    from chunkeval.store import atomic_write
    if args.load:
        facts["load"] = args.load
    text = markdown(version, facts, runs, args.strategies)
    atomic_write(Path(args.out), text + "\n")
    atomic_write(Path(args.out).with_suffix(".json"),
                 json.dumps({"version": version, "facts": facts, "runs": runs}, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
