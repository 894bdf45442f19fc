"""Chroma's own metric code applied to the chunks chunkeval retrieved, against chunkeval's
Chroma metrics and its positional Recall@k.

    python bench/chroma_metrics.py RESULTS.json QUERIES.jsonl BASE_EVALUATION.py \
        [--corpus DIR --strategy NAME]

BASE_EVALUATION.py is chunking_evaluation/evaluation_framework/base_evaluation.py from a
checkout of Chroma's chunking evaluation. Its range helpers and its two scoring methods are
taken from that file as they are (by their syntax tree, so its imports of chromadb are not
needed) and run on the retrieved (document, start, end) of every query in results.json.
precision_omega needs every chunk of the corpus: with --corpus and --strategy, chunkeval
chunks the corpus again to list them.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import numpy as np

FUNCTIONS = ("sum_of_ranges", "union_ranges", "intersect_two_ranges", "difference")
METHODS = ("_scores_from_dataset_and_retrievals", "_full_precision_score")


def chroma_code(path: Path) -> dict:
    """Chroma's functions and methods, from its own source, in one namespace."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted = [node for node in tree.body if isinstance(node, ast.FunctionDef)
              and node.name in FUNCTIONS]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        wanted += [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in METHODS]
    namespace: dict = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path), "exec"), namespace)
    missing = [n for n in FUNCTIONS + METHODS if n not in namespace]
    if missing:
        sys.exit(f"{path}: no {', '.join(missing)}")
    return namespace


class Questions:
    """What Chroma's methods read of `self`: questions_df.iterrows()."""

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def iterrows(self):
        return enumerate(self.rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("queries")
    ap.add_argument("base_evaluation")
    ap.add_argument("--corpus")
    ap.add_argument("--strategy")
    args = ap.parse_args()
    code = chroma_code(Path(args.base_evaluation))
    queries = {}
    for line in Path(args.queries).read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if "query" in obj:
            queries[obj["id"]] = obj
    doc = json.loads(Path(args.results).read_text(encoding="utf-8"))
    k = doc["settings"]["k"]
    for r in doc["results"]:
        if args.strategy and r["strategy"] != args.strategy:
            continue
        rows, retrieved = [], []
        for pq in r["per_query"]:
            q = queries[pq["id"]]
            rows.append({"question": q["query"], "corpus_id": q["doc"],
                         "references": [{"content": "", "start_index": a, "end_index": b}
                                        for a, b in q["spans"]]})
            retrieved.append([{"start_index": a, "end_index": b, "corpus_id": d}
                              for d, a, b, _ in pq["retrieved"][:k]])
        me = Questions(rows)
        stub = type("Stub", (), {"questions_df": me})()
        iou, recall, precision = code["_scores_from_dataset_and_retrievals"](
            stub, retrieved, [k] * len(rows))
        theirs = {"chroma_recall": recall, "chroma_precision": precision, "chroma_iou": iou}
        if args.corpus:
            from chunkeval import strategies
            from chunkeval.corpus import load_corpus
            chunks = [{"start_index": c.start, "end_index": c.end, "corpus_id": c.doc_id}
                      for d in load_corpus(args.corpus).documents
                      for c in strategies.get(r["strategy"]).split(d)]
            theirs["precision_omega"] = code["_full_precision_score"](stub, chunks)[0]
        coverage = [pq["coverage"] for pq in r["per_query"]]
        print(f"{r['strategy']} {r['retriever']} ({len(rows)} queries, top {k})")
        print(f"  {'metric':<18}{'chunkeval':>10}{'Chroma code':>13}{'diff':>9}")
        for name, values in theirs.items():
            ours = r["metrics"][name]["value"] * 100
            print(f"  {name:<18}{ours:>10.3f}{np.mean(values) * 100:>13.3f}"
                  f"{ours - np.mean(values) * 100:>+9.3f}")
        print(f"  {'recall_at_k':<18}{np.mean(coverage) * 100:>10.3f}"
              f"{np.mean(recall) * 100:>13.3f}{(np.mean(coverage) - np.mean(recall)) * 100:>+9.3f}"
              "  (positional coverage, whitespace not counted, vs Chroma's recall)")


if __name__ == "__main__":
    main()
