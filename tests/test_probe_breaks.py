"""The probe's breaks outside retrieval: each input that used to run away, trace back or be
read silently wrong now gives one line that names the file or the setting."""

from __future__ import annotations

import errno
import io
import zipfile

import pytest
from documents import manual_docx
from helpers import INNER, NO_LANGSMITH, import_what_inner_runs_import

from chunkeval.corpus import load_corpus

import_what_inner_runs_import()

pytest_plugins = ["pytester"]


def test_a_word_file_is_bounded_before_it_is_decompressed(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "small.docx").write_bytes(manual_docx())
    # a valid Word file with 3 MB of a part that deflates to a few kilobytes
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(manual_docx())) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("word/media/filler.bin", b"\0" * 3_000_000)
    assert len(buf.getvalue()) < 100_000
    with zipfile.ZipFile(buf) as check:
        size = sum(i.file_size for i in check.infolist())
    (root / "bomb.docx").write_bytes(buf.getvalue())
    corpus = load_corpus(str(root), use_cache=False, max_document_mb=1)
    assert [d.id for d in corpus.documents] == ["small.docx"]
    assert [str(p) for p in corpus.problems] == [
        f"{root}/bomb.docx: decompresses to {size / 1e6:.1f} MB, over the 1.0 MB limit on a "
        "document; skipped (raise the limit with --max-document-mb)"]


def test_a_baselines_folder_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    from chunkeval.errors import BaselineError
    from chunkeval.gate import baselines

    (tmp_path / "blocker").write_text("a file, not a folder", encoding="utf-8")
    with pytest.raises(BaselineError) as under_a_file:
        baselines.update_file(tmp_path / "blocker" / "baselines" / "docs.json", [])
    assert str(under_a_file.value) == (
        f"{tmp_path}/blocker/baselines: the baselines cannot be written there (Not a "
        "directory); docs.json is kept as it was")

    def full(path, data, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(baselines, "atomic_write", full)
    folder = tmp_path / "baselines"
    with pytest.raises(BaselineError) as no_space:
        baselines.update_file(folder / "docs.json", [])
    assert str(no_space.value) == (f"{folder}: the baselines cannot be written there (No space "
                                   "left on device); docs.json is kept as it was")


def test_update_baselines_into_an_unwritable_folder_prints_one_line(docs, pytester):
    (pytester.path / "blocker").write_text("a file, not a folder", encoding="utf-8")
    (pytester.path / "pyproject.toml").write_text(
        f'[tool.chunkeval]\ncorpus = "{docs}"\nquery_sets = ["section-titles"]\n'
        'reference = ["fixed-400"]\nretrievers = ["bm25"]\nbaselines = "blocker/baselines"\n',
        encoding="utf-8")
    result = pytester.runpytest_inprocess(*INNER, "--update-baselines", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", *NO_LANGSMITH,
                                           "pyproject.toml")
    assert result.ret == 1
    out = result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"*baselines NOT written: {pytester.path}/blocker/baselines: "
                                 "the baselines cannot be written there (Not a directory); "
                                 "docs.json is kept as it was*"])
    assert "Traceback" not in out and "INTERNALERROR" not in out


@pytest.mark.parametrize("section, given", [("k = 1e20\n", "1e+20"),
                                            ("k = 3000000000\n", "3000000000")])
def test_an_unreasonable_k_is_refused_when_the_setting_is_read(tmp_path, section, given):
    from chunkeval import config
    from chunkeval.errors import ConfigError
    from chunkeval.results import MAX_K

    (tmp_path / "pyproject.toml").write_text("[tool.chunkeval]\n" + section, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        config.load(tmp_path)
    assert str(e.value) == (f"{tmp_path}/pyproject.toml [tool.chunkeval] k: expected a whole "
                            f"number of at most {MAX_K:,}, got {given}")
    assert config.load(tmp_path, command_line={"k": MAX_K}).k == MAX_K
    with pytest.raises(ConfigError, match="^option --k: expected a whole number of at most"):
        config.load(tmp_path, command_line={"k": 3_000_000_000})


def test_a_bad_analyzer_names_the_file_and_is_one_configuration_error(docs, pytester):
    (pytester.path / "pyproject.toml").write_text(
        f'[tool.chunkeval]\ncorpus = "{docs}"\nquery_sets = ["section-titles"]\n'
        'reference = ["fixed-400"]\nretrievers = ["bm25"]\nanalyzer = "words"\n',
        encoding="utf-8")
    result = pytester.runpytest_inprocess(*INNER, "-p", "no:cacheprovider", "-p", "no:randomly",
                                           *NO_LANGSMITH,
                                           "pyproject.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (f"chunkeval: {pytester.path}/pyproject.toml [tool.chunkeval] analyzer: unknown "
            "analyzer 'words'; known: auto, char2, word, word+stem") in err
    assert "failed" not in result.stdout.str() and "Traceback" not in err


def test_a_query_id_that_is_an_object_or_a_list_is_refused_with_its_line(tmp_path):
    import json

    from chunkeval.queries import build_query_set

    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nBack up the database before the upgrade "
                                   "starts.\n", encoding="utf-8")
    corpus = load_corpus(str(root), use_cache=False)
    lines = [{"id": 7, "query": "backup step", "doc": "guide.md", "answer": "Back up"},
             {"id": {"a": 1}, "query": "backup step", "doc": "guide.md", "answer": "Back up"},
             {"id": ["x"], "query": "backup step", "doc": "guide.md", "answer": "Back up"},
             {"id": True, "query": "backup step", "doc": "guide.md", "answer": "Back up"},
             {"id": "b", "query": "backup step", "doc": "guide.md", "answer": "Back up"}]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    qs = build_query_set(corpus, str(path), max_queries=100)
    assert [q.id for q in qs.queries] == ["7", "b"]
    assert [str(p) for p in qs.problems] == [
        f"{path}:2: 'id' must be a string or a whole number, not an object; line skipped",
        f"{path}:3: 'id' must be a string or a whole number, not a list; line skipped",
        f"{path}:4: 'id' must be a string or a whole number, not true or false; line skipped"]


class Killed(BaseException):
    """What a kill between two renames leaves: the renames done so far, nothing after."""


def test_a_run_killed_between_its_renames_leaves_outputs_no_reader_takes(tmp_path,
                                                                         monkeypatch):
    import hashlib
    import json
    import os

    from chunkeval import store
    from chunkeval.errors import OutputError
    from chunkeval.session import read_results

    out = tmp_path / "out"
    old = {"results.json": '{"old": 1}', "report.md": "old md", "report.html": "old html"}
    store.write_together(out, old)
    assert store.outputs_file(out / "results.json") == b'{"old": 1}'
    real, renamed = os.replace, []

    def killed_after_one(src, dst):  # the manifest's "writing" mark, then results.json
        if len(renamed) == 2:
            raise Killed()
        renamed.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", killed_after_one)
    with pytest.raises(Killed):
        store.write_together(out, {"results.json": '{"new": 2}', "report.md": "new md",
                                   "report.html": "new html"})
    monkeypatch.undo()
    # the new results.json beside the old reports, as a kill leaves them
    assert (out / "results.json").read_text() == '{"new": 2}'
    assert (out / "report.md").read_text() == "old md"
    with pytest.raises(OutputError, match=f"^{out}: a run stopped"):
        store.outputs_file(out / "results.json")
    with pytest.raises(OutputError, match=f"^{out}: a run stopped"):
        read_results(out)
    # the next whole write is read again, and keeps what another set listed
    store.write_together(out, {"sweep.json": "{}"})
    store.write_together(out, {"results.json": '{"new": 2}', "report.md": "new md",
                               "report.html": "new html"})
    listed = json.loads((out / "chunkeval-manifest.json").read_text())["files"]
    assert sorted(listed) == ["report.html", "report.md", "results.json", "sweep.json"]
    assert store.outputs_file(out / "sweep.json") == b"{}"
    assert listed["results.json"] == hashlib.sha256(b'{"new": 2}').hexdigest()
    # a folder written before there were manifests is read as it is
    (out / "results.json").write_text('{"edited": 3}')
    (out / "chunkeval-manifest.json").unlink()
    assert store.outputs_file(out / "results.json") == b'{"edited": 3}'
