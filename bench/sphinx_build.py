"""A Sphinx HTML build beside its own sources: does chunkeval read the same manual from both?

Sphinx copies each page's source into the build as `_sources/<page>.rst.txt`. This script
reads the build folder as a corpus (recognised as a Sphinx build: its pages' main content),
copies the sources to a scratch folder as `.rst` files and reads them with chunkeval's
reStructuredText reader, then compares the two texts:

- non-space characters, overall and per page (the pages whose ratio is furthest from 1);
- word tokens: `missing` is the share of the build's tokens the sources' text lacks,
  `residue` the share of the sources' tokens the build does not show (markup read as text).

The default is Python 3.11's documentation as Debian's `python3.11-doc` ships it
(`apt-get download python3.11-doc`, `dpkg -x`), but any Sphinx build with `_sources` works:

    python bench/sphinx_build.py BUILD_DIR --out bench/results/sphinx-build.md

`--also DIR ...` names other builds of the same sources (dirhtml, singlehtml), read beside
the HTML build: the single-page build should hold the whole manual, not its first page.
`--pdf FILE` names the same manual printed to PDF: the section-titles query set built from
it is counted beside the HTML build's (its headings come from the PDF's outline).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

_WORD = re.compile(r"\w+")


def tokens(text: str) -> Counter:
    return Counter(w.lower() for w in _WORD.findall(text))


def compare(html: Counter, rst: Counter) -> tuple[float, float]:
    """(missing, residue): the build's tokens the sources lack, and the sources' tokens the
    build does not show, each as a share of its own side."""
    missing = sum((html - rst).values()) / max(1, sum(html.values()))
    residue = sum((rst - html).values()) / max(1, sum(rst.values()))
    return missing, residue


def read(folder: Path):
    from chunkeval.corpus import load_corpus
    start = time.perf_counter()
    corpus = load_corpus(str(folder), use_cache=False, progress=False)
    return corpus, time.perf_counter() - start


def chars(doc) -> int:
    return len("".join(doc.text.split()))


def measure(build: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        sources = Path(tmp) / "sources"
        for page in (build / "_sources").rglob("*.txt"):
            target = sources / page.relative_to(build / "_sources").with_suffix("")
            if target.suffix != ".rst":
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page, target)
        html, html_s = read(build)
        rst, rst_s = read(sources)
    pairs, unpaired = [], []
    for doc in html.documents:
        twin = re.sub(r"\.html?(?:\.gz)?$", "", doc.id) + ".rst"
        if doc.id.endswith("/index.html") and twin not in rst:  # dirhtml
            twin = doc.id[:-len("/index.html")] + ".rst"
        if twin in rst:
            pairs.append((doc, rst[twin]))
        else:
            unpaired.append(doc)
    # pages an extension generates from files outside the docs (a changelog from the
    # project's NEWS file): their source is a directive, under a tenth of the page
    generated = [(d, r) for d, r in pairs if chars(r) < chars(d) / 10]
    kept = [(d, r) for d, r in pairs if (d, r) not in generated]
    html_tokens = sum((tokens(d.text) for d, _ in kept), Counter())
    rst_tokens = sum((tokens(r.text) for _, r in kept), Counter())
    missing, residue = compare(html_tokens, rst_tokens)
    per_page = sorted(((chars(r) / max(1, chars(d)) - 1, d.id, chars(d), chars(r))
                       for d, r in pairs), key=lambda t: -abs(t[0]))
    return {
        "build": build, "html_docs": len(html), "rst_docs": len(rst), "pairs": len(pairs),
        "html_chars": sum(chars(d) for d, _ in pairs), "rst_chars": sum(chars(r) for _, r in pairs),
        "html_all_chars": html.chars, "rst_all_chars": rst.chars,
        "missing": missing, "residue": residue, "per_page": per_page,
        "unpaired": [(d.id, chars(d)) for d in unpaired],
        "generated": [(d.id, chars(d), chars(r)) for d, r in generated],
        "median_page": statistics.median(abs(p[0]) for p in per_page) if per_page else 0.0,
        "html_problems": [str(p) for p in html.problems],
        "rst_problem_count": len(rst.problems), "seconds": (html_s, rst_s),
    }


def builds(dirs: list[Path]) -> list[tuple[str, int, int, str]]:
    """(folder, documents, non-space characters, the line naming the generator) of each."""
    rows = []
    for folder in dirs:
        corpus, _ = read(folder)
        said = next((p.message for p in corpus.problems if p.message.startswith("recognised")),
                    "not recognised as a site")
        rows.append((folder.name, len(corpus), corpus.chars, said))
    return rows


def section_titles(build: Path, pdf: Path | None, single: Path | None) -> dict:
    """The section-titles questions of the HTML build, of its single-page build (one
    document, as the printed manual is) and of the printed manual."""
    from chunkeval.corpus import load_corpus
    from chunkeval.queries import build_query_set
    counts = {name: len(build_query_set(load_corpus(str(folder), progress=False),
                                        "section-titles"))
              for name, folder in (("html", build), ("single", single)) if folder}
    if pdf is not None:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(pdf, Path(tmp) / pdf.name)
            corpus = load_corpus(tmp, progress=False, use_cache=False)
            doc = corpus.documents[0]
            counts.update(pdf=len(build_query_set(corpus, "section-titles")),
                          pdf_headings=sum(1 for b in doc.blocks if b.is_heading),
                          pdf_pages=max((b.page for b in doc.blocks), default=0),
                          pdf_problems=[p.message for p in corpus.problems])
    return counts


def recognise_single(folder: Path) -> bool:
    from chunkeval.corpus.sites import recognise
    site = recognise(folder)
    return bool(site and site.build.startswith("single"))


def markdown(m: dict, title: str, also: list[tuple[str, int, int, str]],
             titles: dict | None = None) -> str:
    ratio = m["rst_chars"] / m["html_chars"] - 1
    gen_html = sum(h for _, h, _ in m["generated"])
    gen_rst = sum(r for _, _, r in m["generated"])
    rest = (m["rst_chars"] - gen_rst) / max(1, m["html_chars"] - gen_html) - 1
    lines = [
        f"# {title}: the HTML build and its `_sources` read by chunkeval",
        "",
        "`python bench/sphinx_build.py BUILD_DIR`: the build folder read as a corpus (recognised "
        "as a Sphinx build), and its `_sources/*.rst.txt` copied as `.rst` and read with "
        "chunkeval's reStructuredText reader. Pages are paired by name.",
        "",
        "| | HTML build | `_sources` (.rst) |",
        "|---|---:|---:|",
        f"| documents | {m['html_docs']} | {m['rst_docs']} |",
        f"| pages paired | {m['pairs']} | {m['pairs']} |",
        f"| non-space characters (paired pages) | {m['html_chars']:,} | {m['rst_chars']:,} "
        f"({ratio:+.1%}) |",
        f"| the same without the {len(m['generated'])} pages whose source is under a tenth of "
        f"the page (generated from files outside the docs) | {m['html_chars'] - gen_html:,} | "
        f"{m['rst_chars'] - gen_rst:,} ({rest:+.1%}) |",
        f"| non-space characters (all) | {m['html_all_chars']:,} | {m['rst_all_chars']:,} |",
        f"| problems reported | {len(m['html_problems'])} | {m['rst_problem_count']} |",
        f"| read, no cache (s, one run) | {m['seconds'][0]:.1f} | {m['seconds'][1]:.1f} |",
        "",
        "Word tokens over the paired pages but those generated from outside the docs: "
        f"**missing {m['missing']:.1%}** of the build's "
        f"tokens are not in the sources' text; **residue {m['residue']:.1%}** of the sources' "
        "tokens are not in the build's (markup read as text, or text the build does not "
        f"show). Median page: characters differ by {m['median_page']:.1%}.",
        "",
        "The pages that differ most (sources vs build, non-space characters):",
        "",
        "| page | build | sources | difference |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {doc} | {h:,} | {r:,} | {d:+.1%} |" for d, doc, h, r in m["per_page"][:12]]
    if m["generated"]:
        lines += ["", "Pages whose source is under a tenth of the page: " + ", ".join(
            f"{doc} ({h:,} vs {r:,})" for doc, h, r in m["generated"]) + "."]
    if m["unpaired"]:
        lines += ["", "Pages of the build without a source page: " + ", ".join(
            f"{doc} ({n:,} characters)" for doc, n in m["unpaired"]) + "."]
    if also:
        lines += ["", "Other builds of the same sources:", "",
                  "| build | documents | non-space characters | recognised as |",
                  "|---|---:|---:|---|"]
        lines += [f"| {name} | {n} | {c:,} | {said.split(':')[0]} |" for name, n, c, said in also]
    if titles and "pdf" in titles:
        single = (f", the single-page build {titles['single']} "
                  f"({titles['pdf'] / max(1, titles['single']) - 1:+.1%})"
                  if "single" in titles else "")
        lines += ["", f"The manual printed to PDF ({titles['pdf_pages']} pages, "
                      f"{titles['pdf_headings']} headings): section-titles finds "
                      f"{titles['pdf']} questions, the HTML build {titles['html']} "
                      f"({titles['pdf'] / max(1, titles['html']) - 1:+.1%}){single}. "
                      f"Problems: {'; '.join(titles['pdf_problems']) or 'none'}."]
    lines += ["", "The build's lines of `corpus info`:", ""]
    lines += [f"- {p.replace(str(m['build']), 'BUILD_DIR')}" for p in m["html_problems"][:8]]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path, help="a Sphinx HTML build folder holding _sources/")
    ap.add_argument("--title", default="Python 3.11's documentation")
    ap.add_argument("--out", default="bench/results/sphinx-build.md")
    ap.add_argument("--pdf", type=Path, help="the same manual printed to PDF")
    ap.add_argument("--also", type=Path, nargs="*", default=[],
                    help="other builds of the same sources (dirhtml, singlehtml)")
    args = ap.parse_args()
    if not (args.build / "_sources").is_dir():
        sys.exit(f"{args.build}: no _sources/ folder; is it a Sphinx HTML build?")
    Path(args.out).write_text(markdown(measure(args.build), args.title,
                                             builds([args.build, *args.also]) if args.also
                                             else [],
                                             section_titles(args.build, args.pdf, next(
                                                 (a for a in args.also
                                                  if recognise_single(a)), None))
                                             if args.pdf else None), encoding="utf-8")
    print(Path(args.out).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
