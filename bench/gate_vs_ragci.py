"""The warm gate of an outside project, timed against another tool's on the same work.

Three steps, each a subcommand:

    # a project as a team has it: documents, its questions, its 400-character splitter, BM25
    # top 5 (Chroma's chunking benchmark: DATA is the benchmark's general_evaluation_data
    # folder, with corpora/ and questions_df.csv)
    python bench/gate_vs_ragci.py setup-chroma PROJECT --data DATA --bin VENV/bin

    # the same with a folder of Markdown docs (e.g. a MkDocs site's docs/en/docs) and the
    # splitter `chunkeval init --example-splitter` writes
    python bench/gate_vs_ragci.py setup-docs PROJECT --docs DOCS --bin VENV/bin

    # alternating warm runs, medians
    python bench/gate_vs_ragci.py measure --cwd PROJECT --runs 7 \
        --run "before=BEFORE/bin/pytest -q" --run "after=AFTER/bin/pytest -q" \
        --run "rag-ci=RAGCI/bin/rag-ci run --adapter ragci_adapter.py --golden golden.jsonl \
               --top-k 5 && RAGCI/bin/rag-ci gate" --json out.jsonl

`setup-chroma` also writes, for rag-ci (installed from its package, Python 3.12), the same
pipeline as an adapter (`ragci_adapter.py`: the project's splitter, BM25 with k1 1.2 and
b 0.75 over lowercased words, top k) and the same questions with their offsets as its golden
set (`golden.jsonl`); record rag-ci's baseline with `rag-ci run ... && rag-ci gate
--update-baseline`. Each setup records chunkeval's baselines with `pytest --update-baselines`.

`measure` runs every command once untimed (the caches warm, the baselines there), then in
rounds, each round every command once in a rotated order, so that a slow minute of a shared
machine falls on all of them alike. A command is one shell line, timed whole; it runs with
PYTHONDONTWRITEBYTECODE=1, as on many CI images (nothing is compiled into __pycache__, and
pytest's rewritten test modules are not cached either), unless --bytecode. Prints each run
(wall and CPU seconds, the one-minute load average) and the medians; a run that exits
non-zero stops the measurement, since a failed gate is not the work being timed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SPLITTER = '''"""The team's splitter: windows of at most SIZE characters, ending after the last
whitespace in the window where there is one, so that words are not cut."""

SIZE = 400


def spans(text, size=SIZE):
    """[start, end) windows covering `text` in order, each at most `size` characters."""
    out, start, n = [], 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            cut = max(text.rfind(" ", start, end), text.rfind("\\n", start, end))
            if cut > start:
                end = cut + 1
        out.append((start, end))
        start = end
    return out


def split(doc):
    from chunkeval import Chunk

    return [Chunk(doc.id, s, e, doc.text[s:e]) for s, e in spans(doc.text)]


split.params = {"size": SIZE}
'''

ADAPTER = '''"""The same pipeline for rag-ci: the team's splitter (chunking.spans), BM25 (k1 1.2,
b 0.75, lowercased words), top k."""

import math
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))  # the team's own modules

from ragci.contract import Chunk, ParamSpec, RetrievalTrace, Step, adapter  # noqa: E402

from chunking import spans  # noqa: E402

CORPUS = Path(__file__).parent / "corpora"
WORD = re.compile(r"\\w+")


def terms(text):
    return WORD.findall(text.lower())


@adapter(
    index_time_params=[ParamSpec(name="chunk_size", values=[400])],
    query_time_params=[ParamSpec(name="top_k", values=[5])],
    primary_metric="recall@5",
)
class TeamBM25:
    def build_index(self, corpus, config):
        chunks, postings, lengths = [], defaultdict(list), []
        for path in sorted(CORPUS.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            for start, end in spans(text):
                tf = Counter(terms(text[start:end]))
                for t, n in tf.items():
                    postings[t].append((len(chunks), n))
                lengths.append(sum(tf.values()))
                chunks.append((path.name, start, end, text[start:end]))
        n = len(chunks)
        norm = 1.2 * (1 - 0.75 + 0.75 * np.array(lengths) / (sum(lengths) / n))
        # each term's chunks and their BM25 weights: a query is a few array additions
        weights = {}
        for t, p in postings.items():
            idf = math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5))
            ids = np.array([i for i, _ in p])
            tf = np.array([c for _, c in p], dtype=float)
            weights[t] = ids, idf * tf * 2.2 / (tf + norm[ids])
        return chunks, weights

    def retrieve(self, query, index, config):
        chunks, weights = index
        scores = np.zeros(len(chunks))
        for t in set(terms(query)):
            if t in weights:
                ids, w = weights[t]
                scores[ids] += w
        best = np.argsort(-scores, kind="stable")[: config.get("top_k", 5)]
        return RetrievalTrace(
            steps=[Step(query=query, chunks=[
                Chunk(text=chunks[i][3], doc_id=chunks[i][0], char_start=chunks[i][1],
                      char_end=chunks[i][2], score=float(scores[i]))
                for i in best if scores[i] > 0])],
            latency_ms=1.0,
        )
'''


def _run(cmd: list[str], cwd: Path) -> None:
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def setup_chroma(project: Path, data: Path, bin_dir: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    shutil.copytree(data / "corpora", project / "corpora", dirs_exist_ok=True)
    (project / "chunking.py").write_text(SPLITTER, encoding="utf-8")
    (project / "ragci_adapter.py").write_text(ADAPTER, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "gate-chroma"\nversion = "0"\n\n[tool.chunkeval]\n'
        'corpus = "corpora"\nquery_sets = ["questions.jsonl"]\n'
        'splitters = ["chunking:split"]\nreference = []\nretrievers = ["bm25"]\nk = 5\n',
        encoding="utf-8")
    _run([str(bin_dir / "chunkeval"), "queries", "import", "chroma",
          str(data / "questions_df.csv"), "--corpus", "corpora", "--out", "questions.jsonl"],
         project)
    # rag-ci's golden set: the same questions, the same offsets
    texts = {p.name: p.read_text(encoding="utf-8") for p in (project / "corpora").glob("*.md")}
    with open(data / "questions_df.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lines = []
    for i, row in enumerate(rows, 1):
        doc = row["corpus_id"] + ".md"
        refs = json.loads(row["references"])
        lines.append(json.dumps({"id": f"q{i}", "question": row["question"],
                                 "required_passages": [
                                     {"doc_id": doc, "char_start": r["start_index"],
                                      "char_end": r["end_index"],
                                      "text": texts[doc][r["start_index"]:r["end_index"]]}
                                     for r in refs]}))
    (project / "golden.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run([str(bin_dir / "pytest"), "-q", "--update-baselines"], project)


def setup_docs(project: Path, docs: Path, bin_dir: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    shutil.copytree(docs, project / "docs", dirs_exist_ok=True)
    if not (project / "pyproject.toml").exists():
        (project / "pyproject.toml").write_text('[project]\nname = "docs"\nversion = "0"\n',
                                                encoding="utf-8")
    if not (project / "chunking.py").exists():
        _run([str(bin_dir / "chunkeval"), "init", "--docs", "docs", "--example-splitter"],
             project)
    _run([str(bin_dir / "pytest"), "-q", "--update-baselines"], project)


def run_once(command: str, cwd: Path, env: dict) -> dict:
    started = time.perf_counter()
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.stdout.close()
    return {"seconds": round(wall, 3), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
            "load": round(os.getloadavg()[0], 2), "exit": os.waitstatus_to_exitcode(status),
            "tail": out.decode("utf-8", "replace").strip().splitlines()[-3:]}


def measure(cwd: Path, runs: dict[str, str], rounds: int, bytecode: bool,
            out: str | None) -> int:
    env = dict(os.environ)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    labels = list(runs)
    for label in labels:  # warm: caches filled, modules found once
        r = run_once(runs[label], cwd, env)
        print(f"{label}: untimed first run {r['seconds']:.2f} s, exit {r['exit']}", flush=True)
        if r["exit"]:
            print("\n".join(r["tail"]))
            return 1
    timed: dict[str, list[dict]] = {label: [] for label in labels}
    for i in range(rounds):
        order = labels[i % len(labels):] + labels[:i % len(labels)]
        for label in order:
            r = run_once(runs[label], cwd, env)
            timed[label].append(r)
            print(f"round {i + 1} {label}: {r['seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s "
                  f"CPU, load {r['load']:.1f}, exit {r['exit']}", flush=True)
            if r["exit"]:
                print("\n".join(r["tail"]))
                return 1
    medians = {}
    for label in labels:
        rs = timed[label]
        medians[label] = {k: round(statistics.median(r[k] for r in rs), 3)
                          for k in ("seconds", "cpu_seconds", "load")}
        walls = sorted(r["seconds"] for r in rs)
        print(f"{label}: median {medians[label]['seconds']:.2f} s wall "
              f"(range {walls[0]:.2f}-{walls[-1]:.2f}), {medians[label]['cpu_seconds']:.2f} s CPU, "
              f"{len(rs)} runs")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"cwd": str(cwd), "commands": runs, "bytecode": bytecode,
                                "runs": timed, "median": medians,
                                "when": time.strftime("%Y-%m-%d %H:%M")}) + "\n")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    chroma = sub.add_parser("setup-chroma", help="a project on Chroma's chunking benchmark")
    chroma.add_argument("project", type=Path)
    chroma.add_argument("--data", type=Path, required=True,
                        help="the benchmark's folder holding corpora/ and questions_df.csv")
    chroma.add_argument("--bin", type=Path, required=True,
                        help="the bin folder of a virtual environment with chunkeval installed")
    docs = sub.add_parser("setup-docs", help="a project on a folder of documents")
    docs.add_argument("project", type=Path)
    docs.add_argument("--docs", type=Path, required=True)
    docs.add_argument("--bin", type=Path, required=True)
    m = sub.add_parser("measure", help="alternating warm runs, medians")
    m.add_argument("--cwd", type=Path, required=True)
    m.add_argument("--run", action="append", required=True, metavar="LABEL=COMMAND",
                   help="a label and a shell command (repeatable)")
    m.add_argument("--runs", type=int, default=7, help="timed rounds (default 7)")
    m.add_argument("--bytecode", action="store_true",
                   help="leave PYTHONDONTWRITEBYTECODE as it is in the environment")
    m.add_argument("--json", metavar="FILE", help="append the runs and medians here (JSONL)")
    args = p.parse_args()
    if args.command == "setup-chroma":
        setup_chroma(args.project.resolve(), args.data.resolve(), args.bin.resolve())
    elif args.command == "setup-docs":
        setup_docs(args.project.resolve(), args.docs.resolve(), args.bin.resolve())
    else:
        runs = {}
        for spec in args.run:
            label, sep, command = spec.partition("=")
            if not sep or not label.strip() or not command.strip():
                p.error(f"--run {spec!r}: expected LABEL=COMMAND")
            runs[label.strip()] = command
        return measure(args.cwd.resolve(), runs, args.runs, args.bytecode, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
