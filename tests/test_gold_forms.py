"""Gold answers as `answer`, `answers` or `spans`; a length function of the user's choice;
and a run on a Markdown corpus whose recall is recomputed here from results.json and the dump."""

import json

import numpy as np
import pytest

from chunkeval.cli import main
from chunkeval.corpus import load_corpus
from chunkeval.scoring import chunk_stats, coverage_of, score
from chunkeval.outside import length_function
from chunkeval.model import Chunk, Query, QuerySet
from chunkeval.errors import ConfigError, ContractError, InputError
from chunkeval.queries import build_query_set

@pytest.fixture
def corpus_dir(manuals):
    root = manuals(markdown=True, folder="guide", code=True)
    (root / "notes.txt").write_text("Plain notes about the mirror.\n\nA second note about "
                                    "sound cards and their drivers.\n", encoding="utf-8")
    return root


def span_of(text, needle):
    start = text.index(needle)
    return [start, start + len(needle)]


def query_lines(corpus):
    part1 = corpus["guide/part1.md"].text
    part2 = corpus["guide/part2.md"].text
    return [
        {"id": "one", "query": "handle backup step 0", "doc": "guide/part1",
         "answer": "To handle backup in step 0, open the backup panel"},
        {"id": "many", "query": "network panel and confirm", "doc": "guide/part1.md",
         "answers": ["To handle network in step 1, open the network panel",
                     "the network log then shows the new state"]},
        {"id": "spans", "query": "printing option", "doc": "guide/part1.md",
         "spans": [span_of(part1, "open the printing panel, choose option 2"),
                   span_of(part1, "| printing | 1 |")]},
        {"id": "far", "query": "kernel check apply", "doc": "guide/part2.md",
         "spans": [span_of(part2, "kernel --check\n\nkernel --apply")]},
        {"id": "txt", "query": "sound cards drivers", "doc": "notes.txt",
         "answers": ["A second note about sound cards"]},
    ]


def write_queries(path, lines):
    path.write_text("".join(json.dumps(q) + "\n" for q in lines), encoding="utf-8")
    return path


# --- the JSONL reader --------------------------------------------------------------------

def test_each_gold_form_is_read(corpus_dir, tmp_path):
    corpus = load_corpus(str(corpus_dir), use_cache=False)
    lines = query_lines(corpus)
    qs = build_query_set(corpus, str(write_queries(tmp_path / "q.jsonl", lines)))
    assert qs.problems == ()
    by_id = {q.id: q for q in qs.queries}
    assert by_id["one"].answers == () and by_id["one"].golds == (lines[0]["answer"],)
    assert by_id["many"].golds == tuple(lines[1]["answers"])
    text = corpus["guide/part1.md"].text
    assert by_id["spans"].spans == tuple(tuple(s) for s in lines[2]["spans"])
    assert by_id["spans"].golds == tuple(text[a:b] for a, b in lines[2]["spans"])
    # the code block's blank line is whitespace, which gold texts do not keep
    assert by_id["far"].golds == ("kernel --check kernel --apply",)


def test_bad_gold_lines_name_file_and_line(corpus_dir, tmp_path):
    corpus = load_corpus(str(corpus_dir), use_cache=False)
    n = len(corpus["guide/part0.md"].text)
    good = {"id": "ok", "query": "q", "doc": "guide/part0.md", "answers": ["Part 0"]}
    bad = [
        {"id": "b1", "query": "q", "doc": "guide/part0.md", "spans": [[0, n + 1]]},
        {"id": "b2", "query": "q", "doc": "guide/part0.md", "spans": [[5, 5]]},
        {"id": "b3", "query": "q", "doc": "guide/part0.md", "spans": "0-5"},
        {"id": "b4", "query": "q", "doc": "guide/part0.md", "answers": []},
        {"id": "b5", "query": "q", "doc": "guide/part0.md", "answers": ["Part 0", "no such text"]},
        {"id": "b6", "query": "q", "doc": "guide/part0.md", "answer": "Part 0", "spans": [[0, 4]]},
        {"id": "b7", "query": "q", "doc": "guide/part0.md", "spans": [[0, 1.5]]},
        {"id": "b8", "query": "q", "doc": "guide/part0.md"},
    ]
    path = write_queries(tmp_path / "bad.jsonl", [good, *bad])
    qs = build_query_set(corpus, str(path))
    assert [q.id for q in qs.queries] == ["ok"]
    said = {p.line: p.message for p in qs.problems}
    assert sorted(said) == list(range(2, 10))
    assert all(p.path == str(path) for p in qs.problems)
    assert f"<= {n}" in said[2] and "guide/part0.md" in said[2]
    assert "'spans' item 0" in said[3]
    assert "list of [start, end]" in said[4]
    assert "non-empty list" in said[5]
    assert "'answers' item 1 not found" in said[6]
    assert "one gold form" in said[7]
    assert "integers" in said[8]
    assert "answer, answers or spans" in said[9]
    with pytest.raises(InputError, match="bad.jsonl"):
        build_query_set(corpus, str(write_queries(tmp_path / "bad.jsonl", bad)))


# --- metrics over several gold texts ---------------------------------------------------------

def shingle_set(text, n=8):
    s = "".join(text.split())
    return {s[i:i + n] for i in range(len(s) - n + 1)} if len(s) > n else {s}


def test_coverage_is_over_the_union_of_the_gold_texts():
    golds = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota"]
    chunk = "xx alpha beta gamma delta yy iota zz"
    union = set().union(*(shingle_set(g) for g in golds))
    found = {s for s in union if s in "".join(chunk.split())}
    assert 0 < len(found) < len(union)
    assert coverage_of(golds, [chunk]) == pytest.approx(len(found) / len(union))
    q = Query("q", "question", "d", "\n".join(golds), tuple(golds))
    qs = QuerySet("s", (q,), None)
    chunks = [Chunk("d", 0, len(chunk), chunk), Chunk("d", 0, 10, "epsilon zeta eta theta")]
    one = score(qs, chunks, np.array([[0, 1]]), k=1, budgets=(100,))
    both = score(qs, chunks, np.array([[0, 1]]), k=2, budgets=(100,))
    assert one.coverage[0] == pytest.approx(len(found) / len(union))
    assert both.coverage[0] == pytest.approx(1.0)


# --- the length function -----------------------------------------------------------------

def test_length_function_specs(tmp_path, monkeypatch):
    assert length_function("chars") is len
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wordcount11.py").write_text(
        "def words(text):\n    return len(text.split())\n"
        "def bad(text):\n    return 1.5\n"
        "NOT_CALLABLE = 3\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # undone after the test
    assert length_function("wordcount11:words")("a b  c") == 3
    with pytest.raises(ContractError, match="must return an int"):
        length_function("wordcount11:bad")("a b")
    for spec, message in [("words", "expected 'chars' or 'module:attribute'"),
                          ("no_such_module_11:f", "cannot import"),
                          ("wordcount11:nope", "has no attribute"),
                          ("wordcount11:NOT_CALLABLE", "not callable")]:
        with pytest.raises(ConfigError, match=message):
            length_function(spec)


def test_budget_and_chunk_stats_use_the_length():
    q = Query("q", "question", "d", "one two\nthree four five", ("one two", "three four five"))
    qs = QuerySet("s", (q,), None)
    chunks = [Chunk("d", 0, 9, "one two"), Chunk("d", 9, 30, "three four five six seven")]
    words = lambda t: len(t.split())  # noqa: E731
    by_words = score(qs, chunks, np.array([[0, 1]]), k=1, budget=7, budgets=(2, 7),
                     length=words)
    assert [r[3] for r in by_words.retrieved[0]] == [2, 5]
    assert by_words.budget_coverage[0] == pytest.approx(1.0)
    by_chars = score(qs, chunks, np.array([[0, 1]]), k=1, budget=7, budgets=(2, 7))
    assert [r[3] for r in by_chars.retrieved[0]] == [7]
    assert 0 < by_chars.budget_coverage[0] < 1.0
    assert chunk_stats(chunks, words).max_len == 5
    assert chunk_stats(chunks).max_len == len(chunks[1].text)


# --- a run on Markdown, recomputed -----------------------------------------------------------

def recompute(result, docs, golds, rewritten, k, budget):
    """Recall@k and budget recall from results.json rows and the dump, without chunkeval.
    Gold given as spans is positional: a gold character (not whitespace) counts when a
    retrieved chunk of its document that is its range's slice holds its position; a chunk
    that is not (rewritten) covers the positions of the gold shingles its text holds."""
    recall, budget_recall = [], []
    for row in result["per_query"]:
        doc_id, texts, spans = golds[row["id"]]
        gold = set().union(*(shingle_set(g) for g in texts))

        def covered(rows):
            found = set()
            for d, a, b, _ in rows:
                if d != doc_id:
                    continue
                text = rewritten.get(f"{d}:{a}:{b}", docs[d][a:b])
                bare = "".join(text.split())
                found |= {s for s in gold if s in bare}
            return len(found) / len(gold)

        if spans:
            doc = docs[doc_id]
            places = {p for a, b in spans for p in range(a, b) if not doc[p].isspace()}

            def covered(rows):  # noqa: F811 (positional gold)
                found = set()
                for d, a, b, _ in rows:
                    if d != doc_id:
                        continue
                    if f"{d}:{a}:{b}" not in rewritten:
                        found |= places & set(range(a, b))
                        continue
                    held = shingle_set(rewritten[f"{d}:{a}:{b}"])
                    for x, y in spans:
                        at = [p for p in range(x, y) if not doc[p].isspace()]
                        bare = "".join(doc[p] for p in at)
                        found |= {p for i in range(len(bare) - 7) if bare[i:i + 8] in held
                                  for p in at[i:i + 8]}
                return len(found) / len(places)

        taken, total = [], 0
        for r in row["retrieved"]:
            if taken and total + r[3] > budget:
                break
            taken.append(r)
            total += r[3]
        recall.append(covered(row["retrieved"][:k]))
        budget_recall.append(covered(taken))
        assert row["coverage"] == pytest.approx(recall[-1], abs=1e-6)
        assert row["budget_coverage"] == pytest.approx(budget_recall[-1], abs=1e-6)
        # the rank metrics: gains are what each of the top k adds to the coverage above it
        prefix = [covered(row["retrieved"][:j]) for j in range(k + 1)]
        gains = [(j, prefix[j] - prefix[j - 1]) for j in range(1, len(row["retrieved"][:k]) + 1)]
        rr = next((1 / j for j, g in gains if g > 0), 0.0)
        ndcg = sum(g / np.log2(j + 1) for j, g in gains)
        assert row["rr"] == pytest.approx(rr, abs=1e-6)
        assert row["ndcg"] == pytest.approx(ndcg, abs=1e-5)
        most = max((g for _, g in gains), default=0)
        best = next((j - 1 for j, g in gains if g == most), None) if most > 0 else None
        assert row.get("best") == best  # the chunk that added the most gold
    return float(np.mean(recall)), float(np.mean(budget_recall))


def test_run_on_markdown_with_answers_and_spans_recomputes(corpus_dir, tmp_path, monkeypatch,
                                                            capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokens11.py").write_text("def words(text):\n    return len(text.split())\n",
                                          encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    corpus = load_corpus(str(corpus_dir))
    queries = write_queries(tmp_path / "q.jsonl", query_lines(corpus))
    dump, out = tmp_path / "dump.jsonl", tmp_path / "out"
    common = ["--corpus", str(corpus_dir), "--queries", str(queries), "--length", "tokens11:words"]
    assert main(["corpus", "info", *common, "--json", "--dump", str(dump)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["formats"] == {"markdown": 4, "text": 1}
    assert info["blocks"]["table"] == 12 and info["blocks"]["pre"] == 12
    assert main(["run", *common, "--k", "2", "--budget", "40", "--jobs", "1",
                 "--strategies", "fixed-200,structure-400", "--retrievers", "bm25,lsa",
                 "--out", str(out)]) == 0

    docs, golds = {}, {}
    for line in dump.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["type"] == "document":
            docs[obj["id"]] = obj["text"]
            for b in obj["blocks"]:
                assert obj["text"][b["start"]:b["end"]].strip() == obj["text"][b["start"]:b["end"]]
        else:
            text = docs[obj["doc"]]
            if "spans" in obj:
                texts = [text[a:b] for a, b in obj["spans"]]
            else:
                texts = obj.get("answers", [obj["answer"]])
            golds[obj["id"]] = (obj["doc"], texts, obj.get("spans"))
    assert set(golds) == {"one", "many", "spans", "far", "txt"}
    # The dump's documents are the files' own text.
    for doc_id, text in docs.items():
        assert text == (corpus_dir / doc_id).read_text(encoding="utf-8")

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["settings"]["length"] == "tokens11:words"
    assert results["query_sets"]["q"]["coverage"] == "mixed"  # spans by position, text not
    assert len(results["results"]) == 4
    assert all(isinstance(r["positional_fallback"], int) for r in results["results"])
    for r in results["results"]:
        assert set(r["metrics"]) >= {"recall_at_k", "budget_recall", "complete_rate",
                                     "doc_hit_at_k", "precision", "iou", "cut_rate"}
        for row in r["per_query"]:
            for d, a, b, n in row["retrieved"]:
                text = r["rewritten"].get(f"{d}:{a}:{b}", docs[d][a:b])
                assert n == len(text.split())  # lengths measured with the chosen function
        recall, budget_recall = recompute(r, docs, golds, r["rewritten"], 2, 40)
        assert r["metrics"]["recall_at_k"]["value"] == pytest.approx(recall, abs=1e-6)
        assert r["metrics"]["budget_recall"]["value"] == pytest.approx(budget_recall, abs=1e-6)
