"""What several test modules build: small corpora written here (generated pages of word
pairs, and manuals of named topics), and results made up to given numbers, as results.json
holds them and as the typed Result; LangChain's recursive splitter, the independent
implementation the recursive family is held to; a page's script run in a real browser; and
what the suite makes once per run for all its xdist workers (`once_per_run`), or samples
unless CHUNKEVAL_EXHAUSTIVE=1 (`one_per_family`).

Imported as `from helpers import ...` (the tests folder is on the path of every test run).
"""

import fcntl
import html
import json
import os
import random
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from chunkeval.model import Corpus, Document, Part
from chunkeval.results import Result, Results

ADJ = ("amber basalt cobalt dusky ember frosty granite hazel indigo jade khaki lunar maroon "
       "nickel ochre pewter quartz russet sable teal umber velvet willow xenon").split()
NOUN = ("anchor beacon canal delta engine falcon glacier harbor island jetty kettle lantern "
        "meadow nectar orchard pylon quarry rudder signal tunnel").split()
FILLER = ("the a of and to in for with on by from at is was are be this that it as or system "
          "value file list page data mode step rule path user note part item form").split()


@lru_cache(maxsize=None)
def langchain_splitter(size: int, overlap: int = 0, separators: tuple[str, ...] = (),
                       length=None):
    """LangChain's RecursiveCharacterTextSplitter as chunkeval's recursive family is set up:
    separators kept at the end of their piece, sizes in chars or what `length` counts."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    return RecursiveCharacterTextSplitter(separators=list(separators), keep_separator="end",
                                          chunk_size=size, chunk_overlap=overlap,
                                          add_start_index=True, length_function=length or len)


def _sentence(rng: random.Random, keys: list[str], n: int = 12) -> str:
    words = [rng.choice(FILLER) for _ in range(n)]
    for k in keys:
        words.insert(rng.randrange(len(words) + 1), k)
    return " ".join(words).capitalize() + "."


def corpus_pages(n_docs: int = 40, seed: int = 7) -> dict[str, str]:
    """Pages of three sections each, titled by a unique word pair the section's prose repeats,
    so every title is a section-titles query (120 in all) a retriever can answer."""
    rng = random.Random(seed)
    pairs = [(a, b) for a in ADJ for b in NOUN]
    rng.shuffle(pairs)
    pages = {}
    for d in range(n_docs):
        body = [f"<h1>Manual page {d}</h1>", f"<p>{_sentence(rng, [], 10)}</p>"]
        for s in range(3):
            a, b = pairs[d * 3 + s]
            tag = "h3" if s == 2 else "h2"
            body.append(f"<{tag}>{a.capitalize()} {b}</{tag}>")
            for _ in range(2):
                body.append("<p>" + " ".join(_sentence(rng, [a, b]) for _ in range(3)) + "</p>")
            if s == 0:
                rows = "".join(f"<tr><td>{a}-{r}</td><td>"
                               f"{' '.join(rng.choice(FILLER) for _ in range(8))}</td></tr>"
                               for r in range(6))
                body.append(f"<table><tr><th>key</th><th>meaning</th></tr>{rows}</table>")
            if s == 1:
                code = "\n".join(f"{b}_{i} = {rng.randrange(1000)}  # {rng.choice(FILLER)}"
                                 for i in range(5))
                body.append(f"<pre>{html.escape(code)}</pre>")
        pages[f"page{d:02d}.html"] = (
            f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Manual page {d}</title>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    return pages


def pages_with_spans(root: Path) -> tuple[Path, Path]:
    """corpus_pages(24) written into root/docs, and span_queries of them as root/spans.jsonl."""
    docs = root / "docs"
    docs.mkdir()
    for name, text in corpus_pages(24).items():
        (docs / name).write_text(text, encoding="utf-8")
    spans = root / "spans.jsonl"
    spans.write_text(span_queries(docs), encoding="utf-8")
    return docs, spans


def run_on_pages_with_spans(root: Path, strategies: str) -> tuple[Path, Path, Path]:
    """pages_with_spans into root, then `chunkeval run` of the strategies with bm25 and lsa on
    their section titles and spans.jsonl, in one process: (docs, spans, results folder)."""
    from chunkeval.cli import main
    docs, spans = pages_with_spans(root)
    out = root / "out"
    assert main(["run", "--corpus", str(docs), "--queries", "section-titles",
                 "--queries", str(spans), "--strategies", strategies,
                 "--retrievers", "bm25,lsa", "--jobs", "1", "--out", str(out)]) == 0
    return docs, spans, out


def span_queries(docs: Path) -> str:
    """A JSONL set of positional gold on corpus_pages: a query a page, its first section's
    title asking for 120 characters of that section's first paragraph."""
    import json

    from chunkeval.corpus import load_corpus
    lines = []
    for d in load_corpus(str(docs), use_cache=False).documents:
        title = next(b for b in d.blocks if b.kind == "heading2")
        para = next(b for b in d.blocks if b.kind == "paragraph" and b.start > title.end)
        lines.append({"id": f"span-{d.id}", "query": d.block_text(title), "doc": d.id,
                      "spans": [[para.start, para.start + 120]]})
    return "".join(json.dumps(q) + "\n" for q in lines)


# -- results made up to given numbers -------------------------------------------------------

BUDGETS = (500, 1000, 1500, 2000, 3000, 4000)

# strategy: family, mean length, chunk count, cut rate, Recall@5, budget recall
STRATEGIES = {
    "fixed-200": ("fixed", 200, 3440, 0.80, 0.213, 0.373),
    "fixed-400": ("fixed", 400, 1720, 0.71, 0.301, 0.353),
    "fixed-400-ov200": ("fixed", 400, 3430, 0.72, 0.290, 0.322),
    "fixed-1600": ("fixed", 1600, 430, 0.40, 0.441, 0.180),
    "recursive-400-ov40": ("recursive", 284, 2254, 0.52, 0.310, 0.362),
    "structure-800": ("structure", 612, 1120, 0.07, 0.402, 0.301),
}


def make_results(strategies: dict = STRATEGIES, *, retrievers=("bm25", "lsa", "hybrid"),
                 query_sets: dict[str, int] | None = None, overlap: dict | None = None) -> dict:
    """A results document with the given numbers; per-query values average to them."""
    query_sets = query_sets or {"faq-headings": 20}
    overlap = overlap or {"boundaries": 84, "zero": 71, "mean": 3.6, "max": 37}
    rows = []
    for qs, n in query_sets.items():
        for name, (family, mean_len, count, cut, recall, budget) in strategies.items():
            for j, ret in enumerate(retrievers):
                r, b = recall - 0.01 * j, budget - 0.01 * j
                # Alternating +-0.1 around the mean keeps the mean exact for even n.
                cov = [min(1.0, max(0.0, r + (0.1 if i % 2 else -0.1))) for i in range(n)]
                bcov = [min(1.0, max(0.0, b + (0.1 if i % 2 else -0.1))) for i in range(n)]
                rows.append({
                    "strategy": name, "retriever": ret, "query_set": qs,
                    "metrics": {
                        "recall_at_k": {"value": r, "se": 0.034},
                        "budget_recall": {"value": b, "se": 0.014},
                        "complete_rate": {"value": 0.23, "se": 0.02},
                        "doc_hit_at_k": {"value": 0.921, "se": 0.01},
                        "precision": {"value": 0.12, "se": 0.01},
                        "iou": {"value": 0.1, "se": 0.01},
                        "mrr_at_k": {"value": 0.456, "se": 0.02},
                        "ndcg_at_k": {"value": 0.321, "se": 0.02},
                        "cut_rate": {"value": cut, "blocks": 900, "cut": round(cut * 900)}},
                    "budget_curve": {str(x): {"value": min(1.0, b * x / 2000), "se": 0.014}
                                     for x in BUDGETS},
                    "chunks": {"count": count, "mean_len": mean_len, "max_len": mean_len * 2,
                               "under_30": 3,
                               "overlap": dict(overlap) if name.startswith("recursive") else
                               {"boundaries": max(0, count - 48), "zero": max(0, count - 48), "mean": 0,
                                "max": 0}},
                    "seconds": {"split": 0.02, "index": 0.2, "search": 0.05},
                    "per_query": [{"id": f"q{i}", "coverage": cov[i], "budget_coverage": bcov[i],
                                   "doc_hit": True, "retrieved": [["doc.html", 0, 400, 400]]}
                                  for i in range(n)],
                })
    return {
        "schema": 1, "chunkeval": "0.1.0",
        "corpus": {"name": "debian-ja", "fingerprint": "abc123", "documents": 48,
                   "chars": 690000},
        "settings": {"k": 5, "budget": 2000, "budgets": list(BUDGETS), "shingle": 8,
                     "complete_at": 0.95, "seed": 0},
        "query_sets": {qs: {"queries": n, "fingerprint": "f" + qs} for qs, n in query_sets.items()},
        "strategies": {name: {"family": v[0], "params": {}, "slices": True}
                       for name, v in strategies.items()},
        "results": rows,
    }


def rows_of(doc: dict, strategy: str) -> list[dict]:
    return [r for r in doc["results"] if r["strategy"] == strategy]


def typed(doc: dict) -> Results:
    """A results document as the report stages take it: checked, typed."""
    return Results.from_json(doc, "results.json")


def a_result(coverage, doc_hit=None, name: str = "s", **fields) -> Result:
    """A result whose queries have these coverages (budget coverage the same), all from the
    gold document unless `doc_hit` says otherwise; `fields` override the rest."""
    coverage = np.clip(np.asarray(coverage, dtype=float), 0, 1)
    doc_hit = np.ones(len(coverage), bool) if doc_hit is None else doc_hit
    rows = [{"id": f"q{i}", "coverage": float(c), "budget_coverage": float(c),
             "doc_hit": bool(h), "retrieved": []}
            for i, (c, h) in enumerate(zip(coverage, doc_hit))]
    mean = float(coverage.mean()) if len(coverage) else 0.0
    data = {"strategy": name, "retriever": "bm25", "query_set": "qs",
            "metrics": {m: {"value": mean, "se": 0.0} for m in
                        ("recall_at_k", "budget_recall", "complete_rate", "doc_hit_at_k")}
            | {"cut_rate": {"value": 0.1, "blocks": 10, "cut": 1}},
            "chunks": {"count": 10, "mean_len": 100.0, "max_len": 200, "under_30": 0,
                       "overlap": {"boundaries": 0, "zero": 0, "mean": 0.0, "max": 0}},
            "seconds": {"split": 0.0, "index": 0.0, "search": 0.0}, "per_query": rows}
    return Result.from_json(data | fields, "a made-up result")


# -- a corpus without files ----------------------------------------------------------------

TOPICS = ["install", "configure", "upgrade", "backup", "network", "printing", "kernel",
          "firewall", "mirror", "locale", "sound", "storage"]


def tiny_corpus() -> Corpus:
    """Four manuals of three sections each, built from parts (no parsing, no files)."""
    docs = []
    for d in range(4):
        title = f"Manual {d}"
        parts = [Part("heading1", title, (title, "", ""))]
        for t, topic in enumerate(TOPICS[d * 3:d * 3 + 3]):
            h2 = f"Section on {topic}"
            parts.append(Part("heading2", h2, (title, h2, "")))
            for p in range(3):
                parts.append(Part("paragraph", f"The {topic} step {p} of manual {d}: run the "
                                  f"{topic} command with option {p}, check its log, and repeat "
                                  f"until the {topic} status reads ready.", (title, h2, "")))
        docs.append(Document.from_parts(f"m{d}.html", title, parts))
    return Corpus("tiny", tuple(docs))


def write_manuals(root: Path, *, parts: int = 4, markdown: bool = False, folder: str = "",
                  code: bool = False) -> Path:
    """Manuals `part0` ... under root/folder, as HTML or Markdown: a page a part, a section a
    topic (TOPICS, three each), each section three numbered steps and a table of the topic,
    and with `code` a code block of two commands. The steps read "To handle backup in step 0,
    open the backup panel, choose option 0 and confirm; the backup log then shows the new
    state." (in Markdown with a line break before "and confirm")."""
    where = root / folder
    where.mkdir(parents=True, exist_ok=True)
    for d in range(parts):
        topics = TOPICS[d * 3:d * 3 + 3]
        if markdown:
            out = [f"# Part {d}\n"]
            for t in topics:
                out.append(f"## Working with {t}\n")
                out += [f"To handle {t} in step {p}, open the {t} panel, choose option {p}\n"
                        f"and confirm; the {t} log then shows the new state.\n" for p in range(3)]
                out.append(f"| name | value |\n|---|---|\n| {t} | {d} |\n")
                if code:
                    out.append(f"```\n{t} --check\n\n{t} --apply\n```\n")
            (where / f"part{d}.md").write_text("\n".join(out), encoding="utf-8")
            continue
        sections = "".join(
            f"<h2>Working with {t}</h2>"
            + "".join(f"<p>To handle {t} in step {p}, open the {t} panel, choose option {p} "
                      f"and confirm; the {t} log then shows the new state.</p>" for p in range(3))
            + f"<table><tr><th>name</th><th>value</th></tr><tr><td>{t}</td><td>{d}</td></tr>"
              "</table>"
            + (f"<pre>{t} --check\n\n{t} --apply</pre>" if code else "")
            for t in topics)
        (where / f"part{d}.html").write_text(
            f"<html><head><title>Part {d}</title></head><body><h1>Part {d}</h1>{sections}"
            "</body></html>", encoding="utf-8")
    return root


def write_entry(path: Path, header: dict, entry: dict, *, checksum: bool = True) -> None:
    """Write a cache entry file by hand (as a damaged or crafted one would be): the header
    line, its checksum made to match the entry unless `checksum` is False."""
    import gzip
    import hashlib
    import json
    body = json.dumps(entry, ensure_ascii=False).encode("utf-8")
    if checksum:
        header = {**header, "checksum": hashlib.sha256(body).hexdigest()}
    path.write_bytes(gzip.compress(json.dumps(header).encode("utf-8") + b"\n" + body))


# -- a page in a browser ---------------------------------------------------------------------
CHROMIUM = shutil.which("chromium")

# Before the page's own script: any error it raises is kept.
CATCH = """<script>window.caught = [];
window.addEventListener("error", function (e) { window.caught.push(String(e.message)); });
</script>"""

# The end of a probe script: its `out` goes into the DOM, read back by --dump-dom.
PROBE_END = """var pre = document.createElement("pre");
pre.id = "probe";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
})();</script>"""


def probe_in_browser(page: str, probe: str, tmp_path: Path, *flags: str):
    """`page` with CATCH before its styles and the `probe` script (ending in PROBE_END) after
    its body, run by headless Chromium: (what the probe wrote, the finished process)."""
    path = tmp_path / "probe.html"
    path.write_text(page.replace("<style>", CATCH + "<style>", 1)
                    .replace("</body>", probe + "</body>", 1), encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless=new", "--disable-gpu", "--no-sandbox",
                           f"--user-data-dir={tmp_path / 'profile'}", *flags, "--dump-dom",
                           path.as_uri()], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path)
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1))), done


# LangSmith's pytest plugin comes with the langchain extra the suite installs. It has nothing
# to do in the suite's own pytest runs, and importing it costs about 0.5 s of CPU in each
# process: the inner runs below block it, as tox.ini does for the suite's own.
NO_LANGSMITH = ("-p", "no:langsmith_plugin")
# What a pytest run in this process (pytester's runpytest_inprocess) adds: its config would
# mark chunkeval's plugin, imported already, for assertion rewriting again, and warn.
INNER = ("-W", "ignore::pytest.PytestAssertRewriteWarning")

def import_what_inner_runs_import() -> None:
    """Import now what an in-process pytest run of a project imports as it goes. pytester
    drops the modules an inner run imported, so each inner run would import them again, and
    rewrite chunkeval's for assertions again (tenths of a second a run); numpy's and scipy's
    C extensions cannot be imported a second time at all."""
    import lxml.html  # noqa: F401  (the HTML corpus)
    import scipy.sparse  # noqa: F401  (an index)
    import Stemmer  # noqa: F401  (bm25's analyzer)

    import chunkeval.corpus  # noqa: F401
    import chunkeval.evaluate  # noqa: F401
    import chunkeval.gate.base  # noqa: F401
    import chunkeval.report.html  # noqa: F401
    import chunkeval.report.summary  # noqa: F401
    import chunkeval.retrieval.lexical  # noqa: F401


# Checks that sample (one strategy of each family, say) check everything when this is set.
EXHAUSTIVE = os.environ.get("CHUNKEVAL_EXHAUSTIVE", "") not in ("", "0")


def one_per_family(names: list[str]) -> list[str]:
    """`names`, or under CHUNKEVAL_EXHAUSTIVE=1 all of them; else one of each strategy family:
    the first with an overlap where the family has one (overlapping chunks are where scoring
    paths and chunk positions part ways most), else the family's first."""
    from chunkeval import strategies
    if EXHAUSTIVE:
        return list(names)
    chosen: dict[str, str] = {}
    for name in names:
        family = strategies.get(name).family
        if family not in chosen or ("-ov" in name and "-ov" not in chosen[family]):
            chosen[family] = name
    return [n for n in names if n in chosen.values()]


def once_per_run(base: Path, name: str, make: Callable[[Path], object]) -> Path:
    """The folder base/name, filled by `make` once however many processes of one test run
    ask for it: the first makes it under a lock, the others wait for it and then read it.
    A make that fails leaves no folder, so the next one to ask tries again (and fails the
    same way, in its own test)."""
    folder = base / name
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def project_toml(name: str, **chunkeval: object) -> str:
    """A project's pyproject.toml with a [tool.chunkeval] section: its corpus in docs/, the
    section-titles query set and what is given (lists and strings, as TOML spells them)."""
    import json
    settings = {"corpus": "docs", "query_sets": ["section-titles"], **chunkeval}
    lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    return "\n".join(["[project]", f'name = "{name}"', 'version = "0"', "", "[tool.chunkeval]",
                      *lines, ""])

