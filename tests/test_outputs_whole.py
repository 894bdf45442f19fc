"""Files whole under faults: a full disk under --out, a baseline update killed mid-write."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkeval.cli import main

RUN = ["--queries", "section-titles", "--strategies", "fixed-200,structure-400",
       "--retrievers", "bm25", "--jobs", "1"]


@pytest.fixture
def corpus_dir(manuals):
    return manuals(markdown=True)


def test_a_full_disk_under_out_leaves_the_previous_outputs_whole(corpus_dir, tmp_path,
                                                                  monkeypatch, capsys):
    out = tmp_path / "out"
    assert main(["run", "--corpus", str(corpus_dir), *RUN, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"results.json", "report.md", "report.html", "queries.html",
                           "chunkeval-manifest.json"}
    capsys.readouterr()

    real_fsync, synced = os.fsync, []

    def full(fd):  # the disk fills while the third output is written
        where = os.readlink(f"/proc/self/fd/{fd}")
        if where.startswith(str(tmp_path / "out")) or where.startswith(str(tmp_path / ".out")):
            synced.append(where)
            if len(synced) >= 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    # another run, with other numbers: nothing of it may land
    assert main(["run", "--corpus", str(corpus_dir), *RUN, "--k", "3", "--out", str(out)]) == 2
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    err = capsys.readouterr().err
    assert f"{out}: no space left on the device" in err and "MB free" in err


KILLED_WRITE = """
import os, sys, time
from pathlib import Path
from chunkeval.gate import baselines

def hang(*args):  # killed between the write and the rename
    Path(sys.argv[2]).write_text("ready")
    time.sleep(60)

os.replace = hang
baselines.update_file(sys.argv[1], [])
"""


def test_a_killed_baseline_update_leaves_nothing_git_shows(tmp_path, monkeypatch, capsys):
    project = tmp_path / "project"
    docs = project / "docs"
    docs.mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\n## Part\n\nSome text to find.\n", encoding="utf-8")
    monkeypatch.chdir(project)
    assert main(["init", "--docs", "docs"]) == 0
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)

    baseline = project / "baselines" / "docs.json"
    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITE, str(baseline), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the write never reached its rename"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    left = [p.name for p in baseline.parent.iterdir() if p.name.endswith(".tmp")]
    assert left, "the killed write left no temporary file: the test shows nothing"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert status == "", status
    # and the next update removes it at once, not an hour later
    from chunkeval.gate import baselines
    baselines.Baseline(baseline).save()
    assert [p.name for p in baseline.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_cache_that_cannot_be_written_is_said_once(tmp_path, monkeypatch, capsys):
    from chunkeval.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"d{i}.md").write_text(f"# D{i}\n\n## Part\n\nText {i} to find.\n",
                                       encoding="utf-8")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be", encoding="utf-8")
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(blocked))
    assert main(["corpus", "info", "--corpus", str(docs)]) == 0
    err = capsys.readouterr().err
    assert err.count("chunkeval: notice: the cache") == 1, err
    assert str(blocked) in err and "cannot be written" in err
    # many failed writes of several caches in one run: still one notice
    import warnings

    from chunkeval.store import CacheNotice
    from chunkeval.corpus import load_corpus
    from chunkeval.queries import generate

    other = tmp_path / "also-not-a-folder"
    other.write_text("", encoding="utf-8")
    monkeypatch.setenv("CHUNKEVAL_CACHE", str(other))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corpus = load_corpus(str(docs))
        done = generate.generate(corpus, lambda text, section: [], "nomodule:none",
                                 sections=3, progress=False)
    assert done.calls == 3
    notices = [w for w in caught if issubclass(w.category, CacheNotice)]
    assert len(notices) == 1 and str(other) in str(notices[0].message)


def test_a_full_disk_names_the_file_it_could_not_write(tmp_path, monkeypatch, capsys):
    from chunkeval.store import atomic_write

    target = tmp_path / "q.jsonl"
    target.write_text("old\n", encoding="utf-8")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as caught:
        atomic_write(target, "new\n")
    monkeypatch.undo()
    assert caught.value.filename == str(target) and caught.value.errno == errno.ENOSPC
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["q.jsonl"]


def test_the_next_run_removes_a_killed_runs_temporary_folder_not_a_live_one(tmp_path):
    from chunkeval import store
    out = tmp_path / "out"
    stale, live = tmp_path / ".out.killed.tmp", tmp_path / ".out.running.tmp"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "results.json").write_text("{}", encoding="utf-8")
    old = os.stat(stale).st_mtime - store.files.STALE_TEMP_SECONDS - 60
    os.utime(stale, (old, old))
    store.write_together(out, {"results.json": "[]"})
    assert not stale.exists() and live.exists()
    assert (out / "results.json").read_text(encoding="utf-8") == "[]"
