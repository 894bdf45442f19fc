"""A MkDocs project beside its built site: does chunkeval read the Markdown as the site shows
it?

Reads the project's docs folder (Markdown) and the folder `mkdocs build` wrote (recognised as
a MkDocs site: each page's main content) as two corpora, pairs `page.md` with
`page/index.html` (or `page.html`), and compares word tokens per page and overall:
`missing` is the share of the site's tokens the Markdown's text lacks, `residue` the share
of the Markdown's tokens the site does not show (markup read as text; Markdown's own markup,
link targets among it, is kept by design, so the commonest residue tokens are listed).

    python bench/mkdocs_site.py DOCS_DIR SITE_DIR --title "HTTPX" --out bench/results/mkdocs-site.md
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from sphinx_build import compare, read, tokens  # beside this script


# Markdown's own markup that carries words: link targets and code fences' languages
_MARKUP = re.compile(r"\]\([^)\n]*\)|^[ \t>]*(?:```+|~~~+)[^\n]*$|<https?://[^>\s]*>", re.M)


def twin(md_id: str, site) -> str | None:
    stem = md_id.rsplit(".", 1)[0]
    for name in (f"{stem}/index.html", f"{stem}.html",
                 f"{stem[:-len('index')]}index.html" if stem.endswith("index") else None):
        if name and name in site:
            return name
    return None


def measure(docs: Path, built: Path) -> dict:
    markdown, md_s = read(docs)
    site, site_s = read(built)
    pairs = [(md, site[t]) for md in markdown.documents
             if md.id.endswith(".md") and (t := twin(md.id, site))]
    md_tokens = sum((tokens(m.text) for m, _ in pairs), Counter())
    site_tokens = sum((tokens(h.text) for _, h in pairs), Counter())
    missing, residue = compare(site_tokens, md_tokens)
    bare = sum((tokens(_MARKUP.sub(" ", m.text)) for m, _ in pairs), Counter())
    _, residue_bare = compare(site_tokens, bare)
    per_page = []
    for m, h in pairs:
        miss, res = compare(tokens(h.text), tokens(m.text))
        per_page.append((m.id, miss, res))
    per_page.sort(key=lambda p: -(p[1] + p[2]))
    return {"pairs": len(pairs), "md_docs": len(markdown), "site_docs": len(site),
            "missing": missing, "residue": residue, "residue_bare": residue_bare,
            "per_page": per_page,
            "residue_tokens": (md_tokens - site_tokens).most_common(15),
            "missing_tokens": (site_tokens - md_tokens).most_common(15),
            "removed": Counter(dict((rule, n) for m, _ in pairs for rule, n in m.removed)),
            "site_line": next((p.message for p in site.problems
                               if p.message.startswith("recognised")), "not recognised"),
            "seconds": (md_s, site_s)}


def markdown(m: dict, title: str) -> str:
    lines = [
        f"# {title}: the MkDocs Markdown and its built site read by chunkeval",
        "",
        "`python bench/mkdocs_site.py DOCS_DIR SITE_DIR`: the docs folder and the folder "
        "`mkdocs build` wrote, read as two corpora, pages paired by name.",
        "",
        f"- documents: {m['md_docs']} in the docs folder, {m['site_docs']} in the site "
        f"({m['site_line'].split(':')[0]}); {m['pairs']} pages paired",
        f"- word tokens over the paired pages: **missing {m['missing']:.1%}** of the site's "
        f"tokens are not in the Markdown's text; **residue {m['residue']:.1%}** of the "
        f"Markdown's tokens are not on the site, {m['residue_bare']:.1%} without link targets "
        "and code fences' language names (Markdown markup, kept by design)",
        "- characters the Markdown reader removed, by rule: " + ", ".join(
            f"{rule} {n:,}" for rule, n in sorted(m["removed"].items())),
        f"- read, no cache (s, one run): Markdown {m['seconds'][0]:.1f}, site "
        f"{m['seconds'][1]:.1f}",
        "",
        "Commonest residue tokens: " + ", ".join(f"`{t}` {n}" for t, n in m["residue_tokens"]),
        "",
        "Commonest missing tokens: " + ", ".join(f"`{t}` {n}" for t, n in m["missing_tokens"]),
        "",
        "| page | missing | residue |",
        "|---|---:|---:|",
    ]
    lines += [f"| {page} | {miss:.1%} | {res:.1%} |" for page, miss, res in m["per_page"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", type=Path, help="the project's Markdown docs folder")
    ap.add_argument("site", type=Path, help="the folder `mkdocs build` wrote")
    ap.add_argument("--title", default="A MkDocs project")
    ap.add_argument("--out", default="bench/results/mkdocs-site.md")
    args = ap.parse_args()
    text = markdown(measure(args.docs, args.site), args.title)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
