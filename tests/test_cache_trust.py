"""A warm cache never changes a number: a team's code is measured as it is now (whatever
files, environment or modules it reads), and a cache entry that is not what its key says is
a miss. Each case is compared with the same evaluation on an empty cache."""

import json
import sys

import numpy as np
import pytest

from chunkeval import store, retrieval, strategies
from chunkeval.evaluate import Evaluation
from chunkeval.results import Settings

from helpers import tiny_corpus, write_entry

SPEC = "section-titles"

SPLITTER = '''\
import json, os
from pathlib import Path
from chunkeval import Chunk
import sizehelper


def size():
    if os.environ.get("TRUST_SIZE"):
        return int(os.environ["TRUST_SIZE"])
    return json.loads((Path(__file__).parent / "trust.json").read_text())["size"] \\
        * sizehelper.FACTOR // 10


def windows(doc):
    step = size()
    return [Chunk(doc.id, s, min(s + step, len(doc.text)), doc.text[s:s + step])
            for s in range(0, len(doc.text), step)]
'''

RETRIEVER = '''\
from pathlib import Path
import numpy as np

WEIGHTS = Path(__file__).parent / "weights.txt"


def letters(texts):
    w = float(WEIGHTS.read_text())
    out = np.zeros((len(texts), 27), dtype=np.float32)
    for i, t in enumerate(texts):
        for ch in t.lower():
            j = ord(ch) - 97
            out[i, j if 0 <= j < 26 else 26] += 1.0 if j % 2 else w
    out[:, 26] += 1e-3
    return out
'''


@pytest.fixture
def project(tmp_path, cache_dir, monkeypatch):
    """A team's project: a splitter that reads its size from a JSON file, an environment
    variable and a helper module, and a retriever that reads a weights file."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("TRUST_SIZE", raising=False)
    (tmp_path / "trustsplit.py").write_text(SPLITTER, encoding="utf-8")
    (tmp_path / "trustret.py").write_text(RETRIEVER, encoding="utf-8")
    (tmp_path / "trust.json").write_text('{"size": 200}', encoding="utf-8")
    (tmp_path / "sizehelper.py").write_text("FACTOR = 10\n", encoding="utf-8")
    (tmp_path / "weights.txt").write_text("1.0", encoding="utf-8")
    yield tmp_path
    for name in ("trustsplit", "trustret", "sizehelper"):
        sys.modules.pop(name, None)
    strategies.unregister("windows")
    retrieval.unregister("letters")


def _fresh_modules(root) -> None:
    """What a new process sees: the project's modules imported anew."""
    for name in ("trustsplit", "trustret", "sizehelper"):
        sys.modules.pop(name, None)
    strategies.load_splitter("trustsplit:windows", root)
    retrieval.load_retriever("trustret:letters", root)


def _numbers(retriever: str = "bm25", **kw) -> tuple[list, bool]:
    r = Evaluation(tiny_corpus(), Settings(), [SPEC], **kw).result("windows", retriever, SPEC)
    return [(q.id, q.coverage, q.budget_coverage) for q in r.per_query], bool(r.reused)


def _empty_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / f"empty-{len(list(tmp_path.iterdir()))}"))


@pytest.mark.parametrize("change", ["data file", "environment", "helper module"])
def test_a_team_splitter_is_measured_as_it_is_now(project, change, monkeypatch, tmp_path):
    _fresh_modules(project)
    before, _ = _numbers()
    assert _numbers()[1]  # warm: the same chunks give the stored result
    if change == "data file":
        (project / "trust.json").write_text('{"size": 60}', encoding="utf-8")
    elif change == "environment":
        monkeypatch.setenv("TRUST_SIZE", "60")
    else:
        (project / "sizehelper.py").write_text("FACTOR = 3\n", encoding="utf-8")
    _fresh_modules(project)
    warm, reused = _numbers()
    assert not reused and warm != before
    _empty_cache(monkeypatch, tmp_path)
    assert _numbers()[0] == warm  # as on an empty cache


def test_a_team_retriever_is_run_every_session_unless_it_declares_a_key(project, monkeypatch,
                                                                         tmp_path):
    _fresh_modules(project)
    before, _ = _numbers("letters")
    assert not _numbers("letters")[1]  # declares no cache key: run again
    (project / "weights.txt").write_text("5.0", encoding="utf-8")  # the model was retrained
    _fresh_modules(project)
    warm, reused = _numbers("letters")
    assert not reused and warm != before
    _empty_cache(monkeypatch, tmp_path)
    assert _numbers("letters")[0] == warm


def test_a_retrained_model_under_the_same_key_is_said_and_its_vectors_made_anew(project,
                                                                               monkeypatch):
    monkeypatch.setattr(store.files, "SAID", set())
    with open(project / "trustret.py", "a", encoding="utf-8") as f:
        f.write('letters.cache_key = "letters-1"\n')
    _fresh_modules(project)
    evaluation = Evaluation(tiny_corpus(), Settings(), [SPEC])
    evaluation.result("windows", "letters", SPEC)
    assert evaluation.embedding_cache(retrieval.get("letters")).misses > 0
    _fresh_modules(project)
    assert _numbers("letters")[1]  # kept under its key
    (project / "weights.txt").write_text("5.0", encoding="utf-8")
    _fresh_modules(project)
    again = Evaluation(tiny_corpus(), Settings(), [SPEC])
    with pytest.warns(store.CacheNotice, match="retriever 'letters' no longer computes the "
                                               "vectors .* kept under its cache_key"):
        assert not again.result("windows", "letters", SPEC).reused
    assert again.embedding_cache(retrieval.get("letters")).hits == 0


def test_no_cache_reads_and_writes_nothing(project, cache_dir):
    _fresh_modules(project)
    _numbers("letters", result_cache=False, embedding_cache=False)
    assert not cache_dir.exists() or not any(cache_dir.rglob("*.*z"))


def test_no_cache_keeps_no_vectors_on_disk_and_still_counts_the_texts_it_embeds(
        project, cache_dir):
    """Neither a retriever's vectors nor a semantic chunker's go to disk or come from it; the
    texts embedded are counted all the same (they were said to be 0)."""
    from chunkeval.strategies import semantic
    if not semantic.installed():
        pytest.skip("the semantic built-ins need the use extra")
    _fresh_modules(project)
    evaluation = Evaluation(tiny_corpus(), Settings(), [SPEC], result_cache=False,
                            embedding_cache=False)
    result = evaluation.result("windows", "letters", SPEC)
    queries = len(evaluation.query_set(SPEC).queries)
    assert result.embeddings["embedded"] >= result.chunks.count + queries
    evaluation.result("semantic-cluster-400", "bm25", SPEC)  # its sentences embedded by use
    assert not cache_dir.exists() or not any(cache_dir.rglob("*"))


# -- crafted entries -----------------------------------------------------------------------
def _craft_chunks(entry: dict) -> None:
    """Chunk ends moved past the document: every chunk claims the whole rest of it."""
    for row in entry["chunks"]:
        row[2] = row[2] + 10_000
        row[3] = None


def _craft_rows(entry: dict) -> None:
    del entry["per_query"][2:]


def _craft_mean(entry: dict) -> None:
    entry["metrics"]["recall_at_k"]["value"] = 1.0


@pytest.mark.parametrize("craft", ["moved offsets", "cut rows", "changed mean",
                                   "changed mean, by hand", "another strategy's entry"])
def test_an_entry_that_is_not_what_its_key_says_is_a_miss(cache_dir, craft, monkeypatch,
                                                          tmp_path):
    first = Evaluation(tiny_corpus(), Settings(), [SPEC]).result("fixed-200", "bm25", SPEC)
    other = Evaluation(tiny_corpus(), Settings(), [SPEC]).result("fixed-400", "bm25", SPEC)
    if craft == "moved offsets":
        kept = store.CHUNKS
        for p in store.results_root().rglob("*.json.gz"):
            p.unlink()  # the result must be made from the chunks
        paths = [p for p in store.CHUNKS.root().rglob("*.json.gz")
                 if json.dumps(store.CHUNKS.read(p)[1]["summary"]["stats"]["hash"])
                 == json.dumps(first.chunks.hash)]
        [path] = paths
    else:
        kept = store.RESULTS
        [path] = [p for p in store.results_root().rglob("*.json.gz")
                  if store.RESULTS.read(p)[1]["chunks"]["hash"] == first.chunks.hash]
    header, entry = kept.read(path)
    if craft == "moved offsets":
        _craft_chunks(entry)
    elif craft == "cut rows":
        _craft_rows(entry)
    elif craft.startswith("changed mean"):
        _craft_mean(entry)
    else:
        [other_path] = [p for p in store.results_root().rglob("*.json.gz") if p != path]
        entry = store.RESULTS.read(other_path)[1]
        header = {**header, "describes": store.RESULTS.read(other_path)[0]["describes"]}
    write_entry(path, header, entry, checksum=craft != "changed mean, by hand")
    rejected = kept.rejected
    again = Evaluation(tiny_corpus(), Settings(), [SPEC]).result("fixed-200", "bm25", SPEC)
    assert not again.reused and kept.rejected > rejected
    assert again.per_query == first.per_query and again.metrics == first.metrics
    assert other.chunks.hash != first.chunks.hash
    # and what is stored again is the true result
    assert Evaluation(tiny_corpus(), Settings(), [SPEC]).result(
        "fixed-200", "bm25", SPEC).metrics == first.metrics


def test_chunks_read_back_meet_the_contract_of_chunks_just_made(cache_dir):
    made = Evaluation(tiny_corpus(), Settings(), [SPEC]).chunked("structure-400", SPEC)
    [path] = sorted(store.CHUNKS.root().rglob("*.json.gz"))
    header, entry = store.CHUNKS.read(path)
    entry["chunks"][0], entry["chunks"][1] = entry["chunks"][1], entry["chunks"][0]
    write_entry(path, header, entry)
    read = Evaluation(tiny_corpus(), Settings(), [SPEC]).chunked("structure-400", SPEC)
    assert read.searched == made.searched  # out of order: chunked again
    assert np.all([c.start <= c.end for c in read.searched])


# -- chunkeval cache verify ----------------------------------------------------------------
def _verify_run(docs, tmp_path, monkeypatch, *extra) -> list[str]:
    monkeypatch.chdir(tmp_path)
    return ["--corpus", str(docs), "--strategies", "fixed-400,structure-400",
            "--retrievers", "bm25", *extra]


def test_verify_reports_an_entry_edited_by_hand(docs, tmp_path, monkeypatch, capsys):
    from chunkeval.cli import main
    args = _verify_run(docs, tmp_path, monkeypatch)
    assert main(["run", *args, "--out", str(tmp_path / "out")]) == 0
    assert main(["cache", "verify", *args, "--sample", "1"]) == 0
    assert "0 mismatch(es)" in capsys.readouterr().out
    path = sorted(store.results_root().rglob("*.json.gz"))[0]
    header, entry = store.RESULTS.read(path)
    entry["per_query"][0]["coverage"] = 1.0 - entry["per_query"][0]["coverage"]
    write_entry(path, header, entry, checksum=False)  # edited, not re-sealed
    assert main(["cache", "verify", *args, "--sample", "0"]) == 1
    out = capsys.readouterr().out
    assert f"mismatch: results cache {path}: its bytes do not match their checksum" in out


def test_verify_recomputes_a_sample_and_finds_a_sealed_wrong_entry(docs, tmp_path, monkeypatch,
                                                                    capsys):
    """An entry that is whole and consistent but wrong (a bug that stored another number):
    only computing it again finds it."""
    from chunkeval.cli import main
    args = _verify_run(docs, tmp_path, monkeypatch)
    assert main(["run", *args, "--out", str(tmp_path / "out")]) == 0
    for path in store.results_root().rglob("*.json.gz"):
        header, entry = store.RESULTS.read(path)
        for row in entry["per_query"]:
            row["doc_hit"] = not row["doc_hit"]
        hits = [float(r["doc_hit"]) for r in entry["per_query"]]
        entry["metrics"]["doc_hit_at_k"]["value"] = sum(hits) / len(hits)
        write_entry(path, header, entry)
    assert main(["cache", "verify", *args, "--sample", "9"]) == 1
    out = capsys.readouterr().out
    assert "the cached result differs: metrics, per_query" in out
    assert "2 case(s)" in out  # fewer cases than asked: every one


def test_an_older_versions_entries_are_outdated_not_damage(docs, tmp_path, monkeypatch,
                                                            capsys):
    """A cache kept across an upgrade holds the older format (one JSON object, no header
    line): never served, never said to be damaged, not a mismatch for verify."""
    import gzip
    from chunkeval.cli import main
    args = _verify_run(docs, tmp_path, monkeypatch)
    old = store.results_root() / "ab" / f"{'ab' * 32}.json.gz"
    old.parent.mkdir(parents=True)
    old.write_bytes(gzip.compress(json.dumps(
        {"format": 1, "key": "ab" * 32, "result": {"strategy": "x"}}).encode()))
    rejected = store.RESULTS.rejected
    assert store.RESULTS.load("ab" * 32) is None and store.RESULTS.rejected == rejected
    assert main(["cache", "verify", *args, "--sample", "0"]) == 0
    assert "1 of an older format, never served" in capsys.readouterr().out


def test_verify_samples_the_sets_that_gate_first():
    # a default sample of 3 once landed on a four-question set that gates nothing
    from types import SimpleNamespace

    from chunkeval.verify import sample_cases

    gates = {"faq-headings": False, "section-titles": True}
    session = SimpleNamespace(
        strategies=["fixed-400", "split", "structure-400"],
        plan={s: ["bm25", "lsa"] for s in ("fixed-400", "split", "structure-400")},
        query_specs=lambda: list(gates),
        power=lambda spec: SimpleNamespace(gates=gates[spec]))
    assert {spec for _, _, spec in sample_cases(session, 3)} == {"section-titles"}
    everything = sample_cases(session, 12)
    assert len(everything) == 12 and len(set(everything)) == 12
    assert [spec for _, _, spec in everything[:6]] == ["section-titles"] * 6
    # when both gate, a sample of two takes one case of each (evenly spreading the sorted
    # list took the same set twice)
    gates["faq-headings"] = True
    assert {spec for _, _, spec in sample_cases(session, 2)} == set(gates)
