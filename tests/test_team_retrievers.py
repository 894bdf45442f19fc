"""A team's retrievers are measured as they are now: one that declares no cache key is run
every session, whatever it reads (an input limit from the environment, a weights file, a
stop-word file); one that declares a key is kept across sessions, but re-run on a sample
each session, and what it kept is discarded, in one line, when the sample differs.

Each case compares a warm cache with an empty one. The changed words are words of section
titles that no short sample of the corpus (headings, the middles of pages) holds."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from chunkeval import store, retrieval
from chunkeval.cli import main

from helpers import ADJ, NO_LANGSMITH, corpus_pages, import_what_inner_runs_import, project_toml

import_what_inner_runs_import()

pytest_plugins = ["pytester"]

TEAMRET = '''\
"""The team's retrievers: a word-hashing embedder that clips its input to $RET_MAX_CHARS (a
model's input limit), one that weighs words by a weights file, and a word-overlap index that
drops the words of a stop-word file; `kept` and `stopped-kept` declare a cache key."""
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

from chunkeval import Retriever

HERE = Path(__file__).parent
WORD = re.compile(r"\\w+")


def _vectors(texts, weights=None):
    out = np.zeros((len(texts), 512), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in WORD.findall(t.lower()):
            out[i, int(hashlib.sha256(w.encode()).hexdigest()[:8], 16) % 512] += \\
                (weights or {}).get(w, 1.0)
    return out


def clipped(texts):
    limit = int(os.environ.get("RET_MAX_CHARS", "4000"))
    return _vectors([t[:limit] for t in texts])


def weighted(texts):
    return _vectors(texts, json.loads((HERE / "weights.json").read_text(encoding="utf-8")))


class Overlap:
    def __init__(self, texts):
        self.stop = set((HERE / "stop.txt").read_text(encoding="utf-8").split())
        self.terms = [set(WORD.findall(t.lower())) - self.stop for t in texts]

    def search(self, queries, k):
        out = np.full((len(queries), k), -1, dtype=np.int64)
        for i, q in enumerate(queries):
            words = set(WORD.findall(q.lower())) - self.stop
            scores = [len(words & t) for t in self.terms]
            ranked = [j for j in sorted(range(len(scores)), key=lambda j: (-scores[j], j))
                      if scores[j]][:k]
            out[i, :len(ranked)] = ranked
        return out


stopped = Retriever("stopped", "1", build=Overlap)
kept = Retriever("kept", "1", embed=weighted, cache_key="weights-1")
stopped_kept = Retriever("stopped-kept", "1", build=Overlap, cache_key="stop-1")
'''

PYPROJECT = project_toml("team-docs", strategies=["fixed-800"],
                        retrievers=["teamret:clipped", "teamret:weighted", "teamret:stopped"])

# Words of section titles that neither the pages' headings nor their middles hold.
UNSAMPLED = ("cobalt dusky jade ochre pewter anchor delta engine falcon lantern quarry").split()
NAMES = ("clipped", "weighted", "stopped", "kept", "stopped-kept")


def write_team(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in corpus_pages(24).items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "teamret.py").write_text(TEAMRET, encoding="utf-8")
    (root / "weights.json").write_text("{}", encoding="utf-8")
    (root / "stop.txt").write_text("", encoding="utf-8")
    return root


def change(root: Path, what: str, monkeypatch) -> None:
    if what == "input limit":
        monkeypatch.setenv("RET_MAX_CHARS", "420")  # every sample text is shorter
    elif what == "weights file":
        (root / "weights.json").write_text(json.dumps(dict.fromkeys(UNSAMPLED, 0.05)),
                                           encoding="utf-8")
    else:
        (root / "stop.txt").write_text(" ".join(UNSAMPLED), encoding="utf-8")


def as_a_team_runs(monkeypatch, root: Path, cache: Path) -> None:
    """In the team's folder, on `cache`, with the input limit unset and no notice given yet."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delenv("RET_MAX_CHARS", raising=False)
    monkeypatch.setattr(store.files, "SAID", set())
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(cache))
    monkeypatch.chdir(root)


def forget_the_team() -> None:
    sys.modules.pop("teamret", None)
    for name in NAMES:
        retrieval.unregister(name)


@pytest.fixture
def team(tmp_path, cache_dir, monkeypatch):
    root = write_team(tmp_path / "team")
    as_a_team_runs(monkeypatch, root, cache_dir)
    yield root
    forget_the_team()


@pytest.fixture(scope="module")
def run_twice(tmp_path_factory):
    """The team's project run twice on an empty cache, once for the module: the first run's
    numbers, and the folder and cache both runs left, kept aside to be put back."""
    made = tmp_path_factory.mktemp("team-run-twice")
    with pytest.MonkeyPatch.context() as monkeypatch:
        as_a_team_runs(monkeypatch, write_team(made / "team"), made / "cache")
        try:
            before = numbers("before")
            assert not any(reused for _, reused in numbers("again").values())  # run, not remembered
        finally:
            forget_the_team()
    for name in ("team", "cache"):
        shutil.copytree(made / name, made / f"{name}-kept", symlinks=True)
    return made, before


@pytest.fixture
def ran_twice(run_twice, monkeypatch):
    """`team` after two runs: the two runs' folder and cache put back where they ran (the
    cache's entries stay those of that folder), and the first run's numbers."""
    made, before = run_twice
    for name in ("team", "cache"):
        shutil.rmtree(made / name, ignore_errors=True)
        shutil.copytree(made / f"{name}-kept", made / name, symlinks=True)
    as_a_team_runs(monkeypatch, made / "team", made / "cache")
    yield made / "team", before
    forget_the_team()


def numbers(out: str, *args: str) -> dict:
    """A run in what is a new process for the team's module: each retriever's results, but
    for timings and cache counters."""
    sys.modules.pop("teamret", None)
    assert main(["run", "--out", out, "--jobs", "1", *args]) == 0
    doc = json.loads((Path(out) / "results.json").read_text(encoding="utf-8"))
    return {r["retriever"]: ({k: v for k, v in r.items()
                              if k not in ("seconds", "embeddings", "reused")}, r["reused"])
            for r in doc["results"]}


def pytest_in(pytester: pytest.Pytester, root: Path, *args: str) -> pytest.RunResult:
    """pytest in the project, a session of its own in this process (the team's module
    imported anew), with the cache beside the project."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(root)
        monkeypatch.setenv("CHUNKEVAL_CACHE", str(root.parent / "cache"))
        monkeypatch.setattr(sys, "dont_write_bytecode", True)
        for name in ("PYTEST_ADDOPTS", "CI"):
            monkeypatch.delenv(name, raising=False)
        sys.modules.pop("teamret", None)
        return pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", *NO_LANGSMITH, "-rf",
            "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def empty_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(tmp_path / f"empty-{len(list(tmp_path.iterdir()))}"))


@pytest.mark.parametrize("what", ["input limit", "weights file", "stop-word file"])
def test_a_team_retriever_is_run_as_it_is_now(ran_twice, what, monkeypatch, tmp_path):
    name = {"input limit": "clipped", "weights file": "weighted"}.get(what, "stopped")
    team, before = ran_twice  # run twice, the second run computing everything again
    change(team, what, monkeypatch)
    warm = numbers("warm")
    assert warm[name][0]["metrics"] != before[name][0]["metrics"]
    empty_cache(monkeypatch, tmp_path)
    assert numbers("empty")[name] == warm[name]


def test_a_declared_retriever_is_kept_and_a_changed_one_is_caught(team, monkeypatch, tmp_path,
                                                                  capsys):
    args = ("--retriever", "teamret:kept", "--retriever", "teamret:stopped_kept",
            "--retrievers", "kept,stopped-kept")
    numbers("first", *args)
    again = numbers("again", *args)
    assert all(reused for _, reused in again.values())  # kept under its key
    capsys.readouterr()
    # the team changes what both read without changing their keys: every query has an
    # adjective, so any sample of queries holds affected ones
    (team / "weights.json").write_text(json.dumps(dict.fromkeys(ADJ, 0.05)), encoding="utf-8")
    (team / "stop.txt").write_text(" ".join(ADJ), encoding="utf-8")
    warm = numbers("warm", *args)
    said = capsys.readouterr().err.splitlines()
    for name in ("kept", "stopped-kept"):
        lines = [s for s in said if f"retriever {name!r} no longer computes" in s]
        assert len(lines) == 1, said
        assert not warm[name][1]
    empty_cache(monkeypatch, tmp_path)
    assert numbers("empty", *args) == warm
    assert all(reused for _, reused in numbers("after", *args).values())


def test_a_declared_retriever_whose_vectors_were_pruned_is_checked_by_its_results(
        team, cache_dir, monkeypatch, tmp_path, capsys):
    args = ("--retriever", "teamret:kept", "--retrievers", "kept")
    numbers("first", *args)
    for shard in cache_dir.rglob("*.npz"):  # the embedding cache's size limit
        shard.unlink()
    (team / "weights.json").write_text(json.dumps(dict.fromkeys(ADJ, 0.05)), encoding="utf-8")
    warm = numbers("warm", *args)
    assert "retriever 'kept' no longer computes the results" in capsys.readouterr().err
    empty_cache(monkeypatch, tmp_path)
    assert numbers("empty", *args) == warm


def test_a_cache_key_that_is_not_a_string_is_one_line(team, capsys):
    (team / "teamret.py").write_text(TEAMRET + "kept = Retriever('kept', '1', embed=weighted, "
                                     "cache_key=lambda: 3)\n", encoding="utf-8")
    sys.modules.pop("teamret", None)
    assert main(["run", "--out", "out", "--jobs", "1", "--retriever", "teamret:kept",
                 "--retrievers", "kept"]) != 0
    assert "retriever 'kept': cache_key gave 3; it must be a non-empty string" in \
        capsys.readouterr().err


def test_the_gate_on_a_warm_cache_is_the_gate_on_an_empty_one(tmp_path, monkeypatch,
                                                              pytester):
    """pytest on a warm cache after all three changes: the verdict of an empty cache, and
    `--update-baselines` records an empty cache's numbers."""
    monkeypatch.delenv("RET_MAX_CHARS", raising=False)
    warm = write_team(tmp_path / "warm" / "team")  # its cache: tmp_path/warm/cache
    first = pytest_in(pytester, warm, "--update-baselines")
    assert first.ret == 0, first.stdout.str() + first.stderr.str()
    for what in ("input limit", "weights file", "stop-word file"):
        change(warm, what, monkeypatch)

    def on_an_empty_cache(n: int) -> Path:
        root = tmp_path / f"empty{n}" / "team"
        shutil.copytree(warm, root)
        return root

    gate = pytest_in(pytester, warm)
    empty = pytest_in(pytester, on_an_empty_cache(1))
    assert (gate.ret, empty.ret) == (1, 1), gate.stdout.str()
    failed = sorted(line for line in gate.outlines if line.startswith("FAILED"))
    assert failed == sorted(line for line in empty.outlines if line.startswith("FAILED"))
    cold = on_an_empty_cache(2)
    for root in (warm, cold):
        recorded = pytest_in(pytester, root, "--update-baselines")
        assert recorded.ret == 0, recorded.stdout.str() + recorded.stderr.str()
    baselines = [json.loads((root / "baselines" / "docs.json").read_text(encoding="utf-8"))
                 for root in (warm, cold)]
    assert baselines[0]["entries"] == baselines[1]["entries"]


def test_the_sample_holds_the_longest_chunks_and_rare_terms_and_moves_every_day():
    from chunkeval import spotcheck
    texts = [f"alpha {'gamma ' * (i % 5)}delta{i % 7} epsilon{i % 11}" for i in range(385)]
    texts += ["alpha " * 300, "quokka alpha"]  # the longest; a term no other chunk has
    today = spotcheck.chunks(texts, 0)
    assert "alpha " * 300 in today and "quokka alpha" in today
    assert len(today) == len(set(today)) <= spotcheck.LONGEST + spotcheck.RAREST
    assert spotcheck.chunks(texts, 1) != today
    assert len(spotcheck.queries(100, 0)) == spotcheck.QUERIES
    assert spotcheck.queries(100, 0) != spotcheck.queries(100, 1)
