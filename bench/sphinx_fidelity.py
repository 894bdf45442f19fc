"""How close chunkeval's text of a Sphinx project is to what Sphinx shows of it.

Builds the project's sources with `sphinx-build -b text` (its conf.py left out with -C, so
the project's theme and extensions need not be installed; autodoc runs when its package is
importable through --pythonpath) and reads the same folder with chunkeval. Both texts become
word tokens (\\w+, lower case); per document and overall:

- residue: tokens chunkeval has that Sphinx does not show (leaked markup), as a share of
  Sphinx's tokens;
- missing: tokens Sphinx shows that chunkeval lacks, as a share of Sphinx's tokens.

Sphinx's rendered toctrees (lists of other pages' titles) are left out of its text, as
chunkeval leaves them out (sphinx_without_toctree.py). Pages are reported in three groups:
plain; using directives of the project's own Sphinx extensions (the build here does not load
them, so it drops what they would show, and chunkeval reads them as plain text); with
autodoc (their text is in the project's code).
Also: every captioned code block (code-block, sourcecode, literalinclude with :caption:)
must be a caption paragraph followed by a code block in chunkeval's document; and the
warning lines chunkeval prints, one per kind.

    python bench/sphinx_fidelity.py DOCS_DIR --sphinx-build VENV/bin/sphinx-build \\
        --name jinja [--pythonpath SRC] [--markdown results.md] [--json out.json]

Needs Sphinx, in its own environment (it is not a dependency of chunkeval).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from chunkeval.corpus import load_corpus

try:
    from chunkeval.problems import summary
except ImportError:  # an older chunkeval, to compare with: a line per problem
    def summary(problems):
        return [str(p) for p in problems]

TOKEN = re.compile(r"\w+")
CAPTIONED = re.compile(r"^([ \t]*)\.\.[ \t]+(?:code-block|sourcecode|code|literalinclude)::"
                       r".*\n(?:\1[ \t]+:[\w-]+:.*\n)*?\1[ \t]+:caption:[ \t]*(.+)$", re.M)
AUTODOC = re.compile(r"^[ \t]*\.\.[ \t]+(?:\w+:)?auto\w+::", re.M)


def tokens(text: str) -> Counter:
    return Counter(TOKEN.findall(text.lower()))


def sphinx_text(docs: Path, sphinx_build: str, pythonpath: str | None,
                keep: Path | None = None) -> dict[str, str]:
    """doc path without suffix -> the text Sphinx's text builder writes for it. With
    `keep`, the build goes there, and a build already there is reused."""
    out = keep or Path(tempfile.mkdtemp(prefix="sphinx-text-"))
    if keep and (out / "text").is_dir():
        return _texts(out / "text")
    # the extension that drops toctrees sits beside this script
    path = [str(Path(__file__).parent)] + ([pythonpath] if pythonpath else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    cmd = [sphinx_build, "-b", "text", "-C", "-q", "-E", "-d", str(out / ".doctrees"),
           "-D", "extensions=sphinx.ext.autodoc,sphinx.ext.doctest,sphinx_without_toctree",
           "-D", "root_doc=index", str(docs), str(out / "text")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"sphinx-build failed ({done.returncode}): {done.stderr[-2000:]}")
    return _texts(out / "text")


def _texts(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder).with_suffix("")): p.read_text(encoding="utf-8")
            for p in folder.rglob("*.txt")}


def captions_kept(source: str, doc) -> tuple[int, int]:
    """(captioned code blocks in the source, those that are a caption paragraph right
    before a code block in the document)."""
    wanted = [" ".join(m.group(2).split()) for m in CAPTIONED.finditer(source)]
    blocks = [(b.kind, " ".join(doc.block_text(b).split())) for b in doc.blocks]
    kept = 0
    for caption in wanted:
        if any(kind == "paragraph" and text == caption and nxt[0] == "pre"
               for (kind, text), nxt in zip(blocks, blocks[1:])):
            kept += 1
    return len(wanted), kept


def compare(docs: Path, sphinx_build: str, pythonpath: str | None,
            keep: Path | None = None) -> dict:
    sphinx = sphinx_text(docs, sphinx_build, pythonpath, keep)
    corpus = load_corpus(str(docs), use_cache=False, progress=False)
    rows = []
    for doc in corpus.documents:
        stem = re.sub(r"\.(rst|rest)$", "", doc.id)
        if stem not in sphinx:
            continue  # not in the build (an included fragment, an orphan left out)
        source = (docs / doc.id).read_text(encoding="utf-8", errors="replace")
        theirs, ours = tokens(sphinx[stem]), tokens(doc.text)
        total = sum(theirs.values())
        captions, kept = captions_kept(source, doc)
        rows.append({"doc": doc.id, "autodoc": bool(AUTODOC.search(source)),
                     "sphinx_tokens": total, "chunkeval_tokens": sum(ours.values()),
                     "residue": sum((ours - theirs).values()),
                     "missing": sum((theirs - ours).values()),
                     "captions": captions, "captions_kept": kept,
                     "top_residue": [w for w, _ in (ours - theirs).most_common(8)],
                     "top_missing": [w for w, _ in (theirs - ours).most_common(8)]})
    # pages using directives of the project's own Sphinx extensions, which the build here
    # does not load either
    extended = {p.path for p in corpus.problems
                if getattr(p, "kind", "") == "rst-unknown-directive"}
    for r in rows:
        r["extension"] = str(docs / r["doc"]) in extended
    lines = summary(list(corpus.problems))
    return {"docs": str(docs), "rows": rows, "warnings": lines,
            "warning_kinds": len({getattr(p, "kind", "") or p.message
                                  for p in corpus.problems})}


def totals(rows: list[dict]) -> dict:
    sphinx = sum(r["sphinx_tokens"] for r in rows)
    return {"documents": len(rows), "sphinx_tokens": sphinx,
            "residue_pct": 100 * sum(r["residue"] for r in rows) / max(sphinx, 1),
            "missing_pct": 100 * sum(r["missing"] for r in rows) / max(sphinx, 1),
            "captions": sum(r["captions"] for r in rows),
            "captions_kept": sum(r["captions_kept"] for r in rows)}


def markdown(name: str, result: dict, top: int | None = None) -> str:
    rows = result["rows"]
    plain = totals([r for r in rows if not r["autodoc"] and not r["extension"]])
    extension = totals([r for r in rows if r["extension"] and not r["autodoc"]])
    auto = totals([r for r in rows if r["autodoc"]])
    out = [f"### {name}", "",
           "| pages | documents | Sphinx tokens | residue | missing | captioned code blocks kept |",
           "|---|---:|---:|---:|---:|---:|"]
    for label, t in (("plain", plain), ("with the project's own directives", extension),
                     ("with autodoc", auto), ("all", totals(rows))):
        out.append(f"| {label} | {t['documents']} | {t['sphinx_tokens']:,} | "
                   f"{t['residue_pct']:.2f}% | {t['missing_pct']:.2f}% | "
                   f"{t['captions_kept']} of {t['captions']} |")
    out += ["", "Per document (residue and missing as % of Sphinx's tokens; the words most "
                "often in each):", "",
            "| document | needs | tokens | residue | missing | residue words | missing words |",
            "|---|---|---:|---:|---:|---|---|"]
    def share(r: dict) -> float:
        return (r["residue"] + r["missing"]) / max(r["sphinx_tokens"], 1)

    listed = sorted(rows, key=share, reverse=True)
    if top is not None and len(listed) > top:
        out[-3] = out[-3].replace("Per document", f"The {top} documents furthest from Sphinx's "
                                                  f"text (of {len(listed)})")
        listed = listed[:top]
    for r in listed:
        t = max(r["sphinx_tokens"], 1)
        needs = "autodoc" if r["autodoc"] else "extension" if r["extension"] else ""
        out.append(f"| {r['doc']} | {needs} | {r['sphinx_tokens']:,} | "
                   f"{100 * r['residue'] / t:.2f}% | {100 * r['missing'] / t:.2f}% | "
                   f"{' '.join(r['top_residue'][:5])} | {' '.join(r['top_missing'][:5])} |")
    out += ["", f"Warning lines ({len(result['warnings'])} for {result['warning_kinds']} "
                "kinds of problem):", ""]
    # the files as the project names them, not where this machine keeps them
    out += [f"    {line.replace(result['docs'] + '/', '').replace(result['docs'], '.')}"
            for line in result["warnings"]] or ["    (none)"]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", type=Path, help="the Sphinx source folder (holds index.rst)")
    ap.add_argument("--sphinx-build", default="sphinx-build", help="the sphinx-build to run")
    ap.add_argument("--pythonpath", help="where autodoc imports the project's code from")
    ap.add_argument("--name", default=None, help="the project's name in the output")
    ap.add_argument("--markdown", type=Path, help="append the tables to this file")
    ap.add_argument("--json", type=Path, help="write the per-document numbers here")
    ap.add_argument("--top", type=int, help="list only this many documents, the furthest "
                                            "from Sphinx's text first")
    ap.add_argument("--keep", type=Path, help="build Sphinx's text into this folder, or reuse "
                                              "the build already there")
    args = ap.parse_args()
    result = compare(args.docs, args.sphinx_build, args.pythonpath, args.keep)
    text = markdown(args.name or args.docs.name, result, args.top)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.markdown:
        with args.markdown.open("a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
