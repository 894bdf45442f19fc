"""The Ray executor on a real local cluster of two worker processes gives the process pool's
results. Selected with `-m distributed`. The first test has the executor start and stop a
cluster of its own; the last finds one running and leaves it up: its cases share the cluster
it starts (starting one costs some seconds), in one test so that one xdist worker runs them
all (an xdist_group mark does not keep tests on one worker with the suite's scheduler)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkeval
from chunkeval.cli import main
from helpers import corpus_pages

pytestmark = pytest.mark.distributed

STRATEGIES = "fixed-200,recursive-400-ov40,structure-800+prefix,parent-child-r200-s800"


def without_timings(doc: dict) -> dict:
    """What two runs of the same work share: all but timings and embedding-cache counts
    (the second run finds the first's vectors)."""
    drop = ("seconds", "embeddings")
    return {**{k: v for k, v in doc.items() if k != "embeddings"},
            "results": [{k: v for k, v in r.items() if k not in drop} for r in doc["results"]]}


@pytest.fixture(scope="module")
def ray_cluster():
    """A local cluster of two CPUs, as the executor starts for --jobs 2, up until the module
    ends. Its workers have the environment of the moment it starts: a test varies what they
    do through files, not environment variables."""
    import logging

    import ray
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
    yield
    ray.shutdown()


@pytest.fixture
def no_cluster_running():
    """No cluster up, so that the executor starts its own (the shared one, if a test before
    started it, stops; the tests after it then start their own)."""
    import ray
    ray.shutdown()


# The three runs of the comparison, in a process of their own as a shell starts them. In this
# pytest process, what the tests before imported stays loaded (scipy's linear algebra, with
# its own BLAS), and that hid a BLAS that LSA's one-thread limit missed because it was
# loaded after the limit was set: the pool's workers ran their first LSA fit on every core
# (other last bits), Ray's workers on one.
THREE_RUNS = """
import sys

import ray

from chunkeval.cli import main

docs, out, strategies = sys.argv[1:]
common = ["--corpus", docs, "--strategies", strategies, "--retrievers", "bm25,lsa,hybrid",
          "--no-cache"]
for name, how in (("pool", ["--jobs", "2"]), ("serial", ["--jobs", "1"]),
                  ("ray", ["--jobs", "2", "--executor", "ray"])):
    assert main(["run", *common, *how, "--out", f"{out}/{name}"]) == 0, name
    assert not ray.is_initialized(), name  # the executor stopped the cluster it started
"""


def test_ray_cluster_gives_the_process_pool_and_the_serial_results(docs, tmp_path,
                                                                   no_cluster_running):
    # all evaluate (--no-cache): with the cache, the later runs would only read the first's
    # results; the child gets this test's cache through CHUNKEVAL_CACHE
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(Path(chunkeval.__file__).resolve().parent.parent)  # this tree's
    done = subprocess.run([sys.executable, "-c", THREE_RUNS, str(docs), str(tmp_path),
                           STRATEGIES], env=env, text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    pool, serial, ray = (json.loads((tmp_path / d / "results.json").read_text(encoding="utf-8"))
                         for d in ("pool", "serial", "ray"))
    assert len(ray["results"]) == 12
    assert without_timings(ray) == without_timings(pool) == without_timings(serial)


def test_address_needs_a_distributed_executor(tmp_path, capsys):
    assert main(["run", "--corpus", str(tmp_path), "--address", "tcp://127.0.0.1:9"]) == 2
    assert "--address needs --executor ray" in capsys.readouterr().err


def test_an_unreachable_cluster_is_a_clear_error_at_once(tmp_path, monkeypatch, capsys,
                                                         no_cluster_running):
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in list(corpus_pages(4).items()):
        (docs / name).write_text(text, encoding="utf-8")
    assert main(["run", "--corpus", str(docs), "--strategies", "fixed-400", "--retrievers",
                 "bm25", "--executor", "ray", "--address", "127.0.0.1:9",
                 "--out", str(tmp_path / "o")]) == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in capsys.readouterr().err


# An outside splitter that kills the process it runs in the first time it meets a page
# (a worker killed mid-run), and an outside embedding retriever and length measure: what the
# process pool has by inheritance, Ray's workers must import.
PROJECT = '''\
import os
from pathlib import Path

import numpy as np

from chunkeval import Chunk

DEATHS = Path(__file__).parent / "deaths"
DIE = Path(__file__).parent / "die"  # how many times to die, once it is there


def dying(doc):
    if doc.id == "page02.html" and DIE.exists() and DEATHS.stat().st_size < int(
            DIE.read_text()):
        with open(DEATHS, "a") as f:
            f.write("x")
        os._exit(1)
    return [Chunk(doc.id, s, min(s + 300, len(doc.text)), doc.text[s:s + 300])
            for s in range(0, len(doc.text), 300)]


def letters(texts):
    return np.array([[t.count(c) + 1 for c in "etaoinshr"] for t in texts], dtype=np.float32)


def words(text):
    return len(text.split())
'''


def default_corpus_comparison(tmp_path, capsys):
    common = ["--strategies", "fixed-800,structure-400+prefix", "--retrievers", "bm25,lsa",
              "--max-queries", "200", "--jobs", "2", "--no-result-cache"]
    assert main(["run", *common, "--out", str(tmp_path / "pool")]) == 0
    assert main(["run", *common, "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    pool, ray = (json.loads((tmp_path / d / "results.json").read_text(encoding="utf-8"))
                 for d in ("pool", "ray"))
    assert pool["corpus"]["name"] == "debian-ja" and len(ray["results"]) == 8
    assert without_timings(ray) == without_timings(pool)


def outside_code_and_a_killed_worker(tmp_path, monkeypatch, capsys, deaths):
    """Killed once, the worker is restarted and the task run again: the same results as the
    process pool. Killed every time, that task is a failure and every other result is kept.
    On the `docs` fixture's pages, with a cache of its own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in corpus_pages(24).items():
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "proj.py").write_text(PROJECT, encoding="utf-8")
    (tmp_path / "deaths").write_text("")
    common = ["--corpus", str(docs), "--queries", "section-titles", "--splitter",
              "proj:dying", "--retriever", "proj:letters", "--strategies",
              "proj:dying,fixed-400", "--retrievers", "bm25,letters", "--length", "proj:words",
              "--jobs", "2", "--no-result-cache"]
    try:
        assert main(["run", *common, "--out", str(tmp_path / "pool")]) == 0
        (tmp_path / "die").write_text(str(deaths))  # for the Ray run's workers only
        status = main(["run", *common, "--executor", "ray", "--out", str(tmp_path / "ray")])
    finally:
        sys.modules.pop("proj", None)
    pool, ray = (json.loads((tmp_path / d / "results.json").read_text(encoding="utf-8"))
                 for d in ("pool", "ray"))
    killed = len((tmp_path / "deaths").read_text())
    if deaths == 1:
        assert status == 0 and killed == 1
        assert without_timings(ray) == without_timings(pool)
    else:
        assert status == 1 and killed >= 3
        assert {(r["strategy"], r["retriever"]) for r in ray["results"]} == {
            ("fixed-400", "bm25"), ("fixed-400", "letters")}
        [lost] = ray["failed"]
        assert lost["strategy"] == "dying" and "Ray worker was lost" in lost["message"]
        assert "strategy 'dying' failed: its Ray worker was lost" in capsys.readouterr().err


@pytest.mark.corpus
def test_ray_on_a_running_cluster_gives_the_process_pool_results(tmp_path, monkeypatch, capsys,
                                                                  subtests, ray_cluster):
    """On the default corpus (the suite's cache); with outside code whose worker is killed
    once; and killed every time."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with subtests.test("the default corpus"):
        default_corpus_comparison(tmp_path / "default", capsys)
    for deaths in (1, 9):
        with subtests.test("outside code, its worker killed", deaths=deaths), \
                monkeypatch.context() as patch:
            folder = tmp_path / f"killed-{deaths}"
            folder.mkdir()
            outside_code_and_a_killed_worker(folder, patch, capsys, deaths)
