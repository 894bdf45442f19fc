"""The Ray executor on a real local cluster of two worker processes gives the process pool's
results. Selected with `-m distributed`; it starts and stops its own cluster."""

import json

import pytest

from chunkeval.cli import main
from helpers import corpus_pages

pytestmark = pytest.mark.distributed

STRATEGIES = "fixed-200,recursive-400-ov40,structure-800+prefix,parent-child-r200-s800"


def without_timings(doc: dict) -> dict:
    return {**doc, "results": [{k: v for k, v in r.items() if k != "seconds"}
                               for r in doc["results"]]}


def test_ray_cluster_gives_the_process_pool_results(docs, tmp_path, capsys):
    # both evaluate: with the result cache, the second run would only read the first's results
    common = ["--corpus", str(docs), "--strategies", STRATEGIES, "--retrievers", "bm25,lsa,hybrid",
              "--jobs", "2", "--no-result-cache"]
    assert main(["run", *common, "--out", str(tmp_path / "pool")]) == 0
    assert main(["run", *common, "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    pool, ray = (json.loads((tmp_path / d / "results.json").read_text(encoding="utf-8"))
                 for d in ("pool", "ray"))
    assert len(ray["results"]) == 12
    assert without_timings(ray) == without_timings(pool)


def test_address_needs_a_distributed_executor(tmp_path, capsys):
    assert main(["run", "--corpus", str(tmp_path), "--address", "tcp://127.0.0.1:9"]) == 2
    assert "--address needs --executor ray" in capsys.readouterr().err


def test_an_unreachable_cluster_is_a_clear_error_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in list(corpus_pages(4).items()):
        (docs / name).write_text(text, encoding="utf-8")
    assert main(["run", "--corpus", str(docs), "--strategies", "fixed-400", "--retrievers",
                 "bm25", "--executor", "ray", "--address", "127.0.0.1:9",
                 "--out", str(tmp_path / "o")]) == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in capsys.readouterr().err


@pytest.mark.corpus
def test_ray_on_the_default_corpus_gives_the_process_pool_results(tmp_path, capsys):
    common = ["--strategies", "fixed-800,structure-400+prefix", "--retrievers", "bm25,lsa",
              "--max-queries", "200", "--jobs", "2", "--no-result-cache"]
    assert main(["run", *common, "--out", str(tmp_path / "pool")]) == 0
    assert main(["run", *common, "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    pool, ray = (json.loads((tmp_path / d / "results.json").read_text(encoding="utf-8"))
                 for d in ("pool", "ray"))
    assert pool["corpus"]["name"] == "debian-ja" and len(ray["results"]) == 8
    assert without_timings(ray) == without_timings(pool)
