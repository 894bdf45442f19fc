"""The suite's own machinery: what is made once for all xdist workers of a run, and the
sample a sampled check takes."""

import multiprocessing

import pytest

import helpers
from helpers import once_per_run, one_per_family


def _fill(base, tally):
    def make(folder):
        with open(tally, "a") as f:
            f.write("x")
        (folder / "data").write_text("made")
    return once_per_run(base, "thing", make)


def test_what_two_processes_ask_for_at_once_is_made_once(tmp_path):
    tally = tmp_path / "tally"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_fill, args=(tmp_path / "run", tally)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert tally.read_text() == "x"
    assert _fill(tmp_path / "run", tally).joinpath("data").read_text() == "made"
    assert tally.read_text() == "x"


def test_a_make_that_failed_is_tried_again(tmp_path):
    def broken(folder):
        (folder / "half").write_text("")
        raise RuntimeError("no corpus")
    with pytest.raises(RuntimeError):
        once_per_run(tmp_path, "thing", broken)
    folder = once_per_run(tmp_path, "thing", lambda f: (f / "data").write_text("made"))
    assert sorted(p.name for p in folder.iterdir()) == [".made", "data"]


def test_the_sample_holds_every_family_once_and_exhaustive_holds_all(monkeypatch):
    from chunkeval import strategies
    names = strategies.names()
    sample = one_per_family(names)
    families = [strategies.get(n).family for n in sample]
    assert sorted(families) == sorted({strategies.get(n).family for n in names})
    assert len(families) == len(set(families)) < len(names)
    assert "fixed-400-ov40" in sample  # a family with overlaps is sampled by one
    monkeypatch.setattr(helpers, "EXHAUSTIVE", True)
    assert one_per_family(names) == names
