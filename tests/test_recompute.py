"""Every published number recomputes from results.json plus `corpus info --dump` alone.

The recomputation below is written from the method's definition (SPEC section 3) and does not
import chunkeval's metric code: chunkeval only runs the commands that publish the files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import pytest

from chunkeval.cli import main
from helpers import once_per_run


# -- an independent reading of the method -------------------------------------------------------
def shingle_set(text: str, n: int) -> set[str]:
    s = "".join(text.split())
    if len(s) <= n:
        return {s} if s else set()
    return {s[i:i + n] for i in range(len(s) - n + 1)}


def found_in(gold: set[str], text: str, n: int, shingles=shingle_set) -> set[str]:
    if len(gold) == 1 and len(next(iter(gold))) < n:  # a short gold text is one shingle
        return gold if next(iter(gold)) in "".join(text.split()) else set()
    return gold & shingles(text, n)


def read_dump(path: Path) -> tuple[dict, dict]:
    views: dict[str, dict[str, str]] = {}
    gold: dict[str, list[tuple[str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["type"] == "document" and "set" in row:
            views.setdefault(row["set"], {})[row["id"]] = row["text"]
        elif row["type"] == "query":
            gold.setdefault(row["set"], []).append((row["doc"], row["answer"]))
    return views, gold


def recompute(results: list[dict], view: dict[str, str], queries: list[tuple[str, str]],
              settings: dict) -> list[tuple[list[dict], dict]]:
    """Each result's per-query rows and means. `results` share a strategy and a query set,
    so they are taken a query at a time, and a chunk's text is shingled once however many
    queries and retrievers return it."""
    k, budget, n = settings["k"], settings["budget"], settings["shingle"]
    rows = [[] for _ in results]
    precision = [[] for _ in results]
    iou = [[] for _ in results]
    for result in results:
        assert len(result["per_query"]) == len(queries)
    memo: dict[str, set[str]] = {}

    def shingles(text: str, n: int) -> set[str]:
        if text not in memo:
            memo[text] = shingle_set(text, n)
        return memo[text]

    # How many shingles the top chunks hold between them is the check's main cost when chunks
    # are long (3,000 shingles in the top k, from 600 characters a chunk). Their union is not
    # built then: it is the sum of the sets' sizes less, for each set, how much of it the sets
    # before it hold, which is the union of its (small) intersections with each of them. Two
    # chunks' intersection is taken once, however many queries and retrievers return both.
    # Short chunks' sets are united as they are, which is quicker for them.
    common: dict[tuple[int, int], set[str]] = {}

    def union_size(sets: list[set[str]]) -> int:
        sets = list({id(s): s for s in sets}.values())  # a chunk returned twice counts once
        size = 0
        for j, x in enumerate(sets):
            size += len(x)
            held = []
            for y in sets[:j]:
                key = (id(x), id(y)) if id(x) < id(y) else (id(y), id(x))
                if key not in common:
                    common[key] = x & y
                if common[key]:
                    held.append(common[key])
            if held:
                size -= len(held[0]) if len(held) == 1 else len(set().union(*held))
        return size

    for i, (doc, answer) in enumerate(queries):
        g = shingle_set(answer, n)
        for r, result in enumerate(results):
            spans = result["per_query"][i]["retrieved"]
            texts = [result["rewritten"].get(f"{d}:{a}:{b}", view[d][a:b])
                     for d, a, b, _ in spans]
            assert [len(t) for t in texts] == [length for *_, length in spans]
            top = min(k, len(spans))
            prefix, found, found_top = [0.0], set(), set()
            for j, ((d, *_), text) in enumerate(zip(spans, texts), 1):
                if d == doc and g:
                    found |= found_in(g, text, n, shingles)
                prefix.append(len(found) / len(g) if g else 0.0)
                if j == top:  # the gold the top chunks hold
                    found_top = set(found)
            total, taken = 0, 0
            for t in texts:
                if taken and total + len(t) > budget:
                    break
                total, taken = total + len(t), taken + 1
            gains = [(j, prefix[j] - prefix[j - 1]) for j in range(1, top + 1)]
            relevant = [j for j, gain in gains if gain > 0]
            rows[r].append({"coverage": prefix[top], "budget_coverage": prefix[taken],
                            "doc_hit": any(d == doc for d, *_ in spans[:top]),
                            "rr": 1 / relevant[0] if relevant else 0.0,
                            "ndcg": sum(gain / math.log2(j + 1) for j, gain in gains)})
            sets = sorted((shingles(text, n) for text in texts[:top]), key=len, reverse=True)
            if sum(map(len, sets)) < 3_000:
                # the largest set copied whole is quicker than one built from nothing
                union = set(sets[0]) if sets else set()
                union.update(*sets[1:])
                # |seen | g|: the gold shingles in no retrieved chunk, counted off g
                seen, outside = len(union), len(g) - len(g & union)
            else:  # the gold in no retrieved chunk: g less what each chunk holds of it
                seen = union_size(sets)
                outside = len(g) - len(set().union(*(g & s for s in sets)))
            precision[r].append(len(found_top) / seen if seen else 0.0)
            iou[r].append(len(found_top) / (seen + outside) if seen else 0.0)

    def mean(xs) -> float:
        return sum(xs) / len(xs)

    return [(rs, {"recall_at_k": mean([x["coverage"] for x in rs]),
                  "budget_recall": mean([x["budget_coverage"] for x in rs]),
                  "complete_rate": mean([x["coverage"] >= settings["complete_at"] for x in rs]),
                  "doc_hit_at_k": mean([x["doc_hit"] for x in rs]),
                  "mrr_at_k": mean([x["rr"] for x in rs]),
                  "ndcg_at_k": mean([x["ndcg"] for x in rs]),
                  "precision": mean(ps), "iou": mean(us)})
            for rs, ps, us in zip(rows, precision, iou)]


def close(published, mine) -> bool:
    """pytest.approx(mine, abs=1e-6) == published, or stricter (a bool only equals a bool),
    without building an approx object for each of the matrix's million values."""
    if isinstance(published, bool) or isinstance(mine, bool):
        return type(published) is type(mine) and published == mine
    return published == mine or abs(published - mine) <= 1e-6


def check_published(out: Path, dump: Path, strategies: Sequence[str] | None = None,
                    doc: dict | None = None, dumped: tuple[dict, dict] | None = None) -> int:
    """Recompute every per-query row and mean of results.json (`doc`, when read already), or
    those of the given strategies; returns the rows checked. `dumped` is read_dump(dump),
    when read already."""
    doc = doc or json.loads((out / "results.json").read_text(encoding="utf-8"))
    views, gold = dumped or read_dump(dump)
    assert set(views) == set(doc["query_sets"]) == set(gold)
    groups: dict[tuple[str, str], list[dict]] = {}
    for result in doc["results"]:
        if strategies is not None and result["strategy"] not in strategies:
            continue
        groups.setdefault((result["strategy"], result["query_set"]), []).append(result)
    checked = 0
    for (_, qs), results in groups.items():
        for result, (rows, means) in zip(results, recompute(results, views[qs], gold[qs],
                                                            doc["settings"])):
            what = f"{result['strategy']} {result['retriever']} {qs}"
            for i, (mine, published) in enumerate(zip(rows, result["per_query"])):
                for name, value in mine.items():
                    if not close(published[name], value):  # approx's own words on a miss
                        assert published[name] == pytest.approx(value, abs=1e-6), (what, i, name)
            for name, value in means.items():
                assert result["metrics"][name]["value"] == pytest.approx(value, abs=1e-6), \
                    (what, name)
            checked += len(rows)
    return checked


def publish(tmp_path: Path, *args: str) -> tuple[Path, Path]:
    out, dump = tmp_path / "out", tmp_path / "dump.jsonl"
    assert main(["run", *args, "--out", str(out)]) == 0
    assert main(["corpus", "info", *_corpus_and_queries(args), "--dump", str(dump)]) == 0
    return out, dump


def _corpus_and_queries(args: tuple[str, ...]) -> list[str]:
    keep, it = [], iter(args)
    for a in it:
        if a in ("--corpus", "--queries"):
            keep += [a, next(it)]
    return keep


# -- a small corpus written here: every strategy family, a rewriting one, parent-child ----------
@pytest.fixture
def docs(manuals, tmp_path):
    root = manuals(code=True)
    queries = tmp_path / "own.jsonl"
    queries.write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "a", "query": "backup panel option", "doc": "part1",
         "answer": "To handle backup in step 1, open the backup panel"},
        {"id": "b", "query": "kernel check", "doc": "part2", "answer": "--check"},  # short
        ]), encoding="utf-8")
    return root, queries


def test_every_number_of_a_run_recomputes_from_results_and_dump(docs, tmp_path):
    root, queries = docs
    out, dump = publish(tmp_path, "--corpus", str(root), "--queries", "section-titles",
                        "--queries", str(queries), "--jobs", "1", "--strategies",
                        "fixed-200,structure-400+prefix,lc-html-header,parent-child-r200-s800",
                        "--retrievers", "bm25,lsa,hybrid")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert any(r["rewritten"] for r in doc["results"])  # rewritten text is exercised
    assert check_published(out, dump) == 4 * 3 * (12 + 2)


def test_spans_point_into_the_views_not_the_base_documents(docs, tmp_path):
    """Without the views a recomputation goes wrong: the questions are removed from them."""
    root, _ = docs
    out, dump = publish(tmp_path, "--corpus", str(root), "--queries", "section-titles",
                        "--jobs", "1", "--strategies", "fixed-200", "--retrievers", "bm25")
    lines = [json.loads(x) for x in dump.read_text(encoding="utf-8").splitlines()]
    base = {x["id"]: x["text"] for x in lines if x["type"] == "document" and "set" not in x}
    view = {x["id"]: x["text"] for x in lines
            if x["type"] == "document" and x.get("set") == "section-titles"}
    assert set(base) == set(view) and base != view
    assert all("Working with backup" not in t for t in view.values())


@pytest.fixture(scope="module")
def default_run(run_dir) -> tuple[Path, Path, dict, dict, tuple[dict, dict]]:
    """The default matrix on debian-ja, published once per test run: under xdist the first
    worker to check a part runs it, the other waits for it rather than run it too. Its
    results.json (some 40 MB), the dump and the matrix are read once per worker, not once
    per part."""
    folder = once_per_run(run_dir, "default-matrix", publish_default_matrix)
    out = folder / "out"
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    matrix = json.loads((folder / "matrix.json").read_text(encoding="utf-8"))
    return out, folder / "dump.jsonl", doc, matrix, read_dump(folder / "dump.jsonl")


def publish_default_matrix(folder: Path) -> None:
    """The run, and beside it the matrix it was asked for as the publishing process saw it:
    the worker that checks a part may hold strategies or retrievers an earlier test of its
    own registered, so it counts against this, not against its own registries."""
    from chunkeval import strategies
    from chunkeval.evaluate import default_retrievers
    names = [n for n in strategies.names() if strategies.is_builtin(n)]
    publish(folder, "--corpus", "debian-ja", "--strategies", ",".join(names), "--jobs", "2")
    matrix = {s: default_retrievers(s) for s in names}
    (folder / "matrix.json").write_text(json.dumps(matrix), encoding="utf-8")


PARTS = 7  # the check is the suite's longest test: in parts, two workers share it


@pytest.mark.corpus
@pytest.mark.parametrize("part", range(PARTS))
def test_the_full_default_matrix_recomputes(default_run, part):
    out, dump, doc, matrix, dumped = default_run
    assert matrix and len(doc["results"]) == 2 * sum(map(len, matrix.values()))
    mine = list(matrix)[part::PARTS]
    queries = sum(q["queries"] for q in doc["query_sets"].values())
    assert check_published(out, dump, mine, doc, dumped) == queries * sum(len(matrix[s])
                                                                          for s in mine)
