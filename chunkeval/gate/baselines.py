"""Baselines: what a real run measured, kept per query so a new run can be tested against it.

File `baselines/<corpus name>.json` (see baseline_path); the file records which corpus it
was made on (its identity: the built-in name, or the directory), and an update refuses a file
made on another corpus. Updates run through update_file: under a lock on the directory, the
file is read, validated, merged with this run's entries and renamed into place, so that
concurrent updates keep every entry. How a run is judged against an entry: verdict.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..corpus.debian import BUILTIN_CORPORA
from ..errors import BaselineError, ConfigError, InputError
from ..results import UNSTATED_COVERAGE, Result
from ..store import atomic_write
from .entry import RETRIEVER_FIELDS, BaselineEntry, Noise, with_noise
from .verdict import DEFAULT_TOLERANCE, Tolerance, compare

SCHEMA = 1
DIRECTORY = "baselines"  # the baseline files' folder, relative to the project root
# The settings that change what a number means: a baseline made under others is not comparable.
COMPARED_SETTINGS = ("k", "budget", "shingle", "complete_at", "max_queries", "seed", "length")
# What a baseline recorded before a setting existed measured.
_RECORDED_BEFORE = {"length": "chars"}
# --update-baselines=MODE: every selected entry; only the selected entries that fail, changed
# their chunks or are missing; or every selected entry, replacing an unreadable file.
UPDATE_MODES = ("all", "failing", "replace")
LOCK_TIMEOUT = 600  # seconds to wait for another run's update of the same file


def key(strategy: str, retriever: str, query_set: str) -> str:
    return f"{strategy}|{retriever}|{query_set}"


def check_same_retriever(result: Result, entry: BaselineEntry, where: str) -> None:
    """Raise BaselineError when the entry was measured with another retriever version or
    analyzer (entries recorded before these were kept pass)."""
    for name in RETRIEVER_FIELDS:
        recorded, now = getattr(entry, name), getattr(result, name)
        if recorded is not None and now is not None and recorded != now:
            raise BaselineError(
                f"{where}: retriever {result.retriever!r} was recorded with {name} "
                f"{recorded!r}, this run has {now!r}; numbers from another "
                f"{name.replace('_', ' ')} are not compared. If the change is intended, "
                f"re-baseline with `pytest --update-baselines`.")


@dataclass
class Record:
    """One entry a run wants written into a baseline file, with what it was measured on."""

    strategy: str
    retriever: str
    query_set: str
    entry: BaselineEntry
    corpus: dict  # name, fingerprint, documents, chars (and identity)
    settings: dict  # Settings.to_json()
    query_set_fingerprint: str
    coverage: str = UNSTATED_COVERAGE  # the set's coverage rule (scoring.coverage_rule)
    # the set's question keys (Query.key) in order, and its view's document fingerprints:
    # what a later run pairs questions by and tells changed documents by
    query_keys: list[str] | None = None
    view_documents: dict[str, str] | None = None
    commit: str | None = None  # the git commit the project was at when this was measured

    @property
    def key(self) -> str:
        return key(self.strategy, self.retriever, self.query_set)

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "retriever": self.retriever,
                "query_set": self.query_set, "entry": self.entry.to_json(),
                "corpus": self.corpus, "settings": self.settings,
                "query_set_fingerprint": self.query_set_fingerprint, "coverage": self.coverage,
                "query_keys": self.query_keys, "view_documents": self.view_documents,
                "commit": self.commit}

    @classmethod
    def from_json(cls, data: dict) -> "Record":
        return cls(data["strategy"], data["retriever"], data["query_set"],
                   BaselineEntry.from_json(data["entry"], "a record of this run"),
                   data["corpus"], data["settings"], data["query_set_fingerprint"],
                   data.get("coverage", UNSTATED_COVERAGE), data.get("query_keys"),
                   data.get("view_documents"), data.get("commit"))


REBASELINE = "If the change is intended, re-baseline with `pytest --update-baselines`."
RECREATE = "fix it, or replace it with this run's entries by `pytest --update-baselines=replace`"


def _bad(path: Path, problem: str) -> InputError:
    return InputError(str(path), f"not a valid baseline file ({problem}); {RECREATE}")


def _entries(path: Path, data) -> dict[str, BaselineEntry]:
    """The checked entries of a baseline file's contents; InputError naming the file and the
    first thing wrong with it."""
    if not isinstance(data, dict):
        raise _bad(path, "not a JSON object")
    if data.get("schema") != SCHEMA:
        raise _bad(path, f"schema is {data.get('schema')!r}, expected {SCHEMA}")
    for k in ("corpus", "settings", "query_sets", "entries"):
        if not isinstance(data.get(k), dict):
            raise _bad(path, f"{k!r} is {'missing' if k not in data else 'not an object'}")
    for k in ("name", "fingerprint"):
        if not isinstance(data["corpus"].get(k), str) and data["entries"]:
            raise _bad(path, f"corpus.{k} is not a string")
    for name, qs in data["query_sets"].items():
        if not isinstance(qs, dict) or not isinstance(qs.get("fingerprint"), str):
            raise _bad(path, f"query set {name!r} has no fingerprint")
    entries = {}
    for name in sorted(data["entries"]):
        if len(name.split("|")) != 3 or not all(name.split("|")):
            raise _bad(path, f"entry {name!r}: its key is not 'strategy|retriever|query set'")
        try:
            entries[name] = BaselineEntry.from_json(data["entries"][name], str(path), "")
        except InputError as e:
            raise _bad(path, f"entry {name!r}: {e.message}") from None
    return entries


def _read(path: Path) -> tuple[dict, dict[str, BaselineEntry]] | None:
    """The file's contents and its checked entries, None when there is no file; InputError
    when it is bad."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(str(path), f"cannot read the baseline file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise _bad(path, f"not UTF-8: {e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:  # JSONDecodeError included
        raise _bad(path, str(e)) from None
    return data, _entries(path, data)


class Baseline:
    def __init__(self, path: Path, data: dict | None = None,
                 entries: dict[str, BaselineEntry] | None = None):
        self.path = Path(path)
        self.data = data or {"schema": SCHEMA, "corpus": {}, "settings": {}, "query_sets": {}}
        self.entries: dict[str, BaselineEntry] = dict(entries or {})

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """The file's baseline, or an empty one when there is no file yet. A file that is
        not valid JSON, or any entry of it that is malformed, raises InputError."""
        path = Path(path)
        found = _read(path)
        return cls(path) if found is None else cls(path, *found)

    @property
    def exists(self) -> bool:
        return bool(self.entries)

    def entry(self, strategy: str, retriever: str, query_set: str) -> BaselineEntry | None:
        return self.entries.get(key(strategy, retriever, query_set))

    def retrievers(self, strategy: str, query_set: str) -> list[str]:
        """The retrievers with an entry for this strategy and query set."""
        return sorted(k.split("|")[1] for k in self.entries
                      if k.split("|")[0] == strategy and k.split("|")[2] == query_set)

    def check_corpus_identity(self, identity: str) -> None:
        """Raise BaselineError when the file was made on another corpus of the same name."""
        recorded = self.data["corpus"].get("identity")
        if recorded is not None and recorded != identity and self.entries:
            raise BaselineError(
                f"{self.path}: recorded on the corpus {recorded!r}, not on this run's "
                f"{identity!r} (two corpora named {self.data['corpus'].get('name')!r}). "
                "Keep each corpus's baselines apart: pass --chunkeval-baselines OTHER_DIR for "
                "this one, or move the file there; `pytest --update-baselines=replace` "
                "takes the file over for this corpus.")

    def check_comparable(self, corpus: dict, settings: dict, query_set: str,
                         query_set_fingerprint: str, coverage: str = Record.coverage) -> None:
        """Raise BaselineError when this baseline measured something else."""
        self.check_measured_alike(corpus, settings, query_set, coverage)
        rec = self.data["corpus"]
        if rec.get("fingerprint") != corpus["fingerprint"]:
            raise BaselineError(
                f"{self.path}: recorded on corpus {rec.get('name')!r} fingerprint "
                f"{rec.get('fingerprint')}, this run's corpus has {corpus['fingerprint']}: "
                f"the corpus changed, so the numbers are not comparable. {REBASELINE}")
        qs = self.data["query_sets"].get(query_set)
        if qs is not None and qs.get("fingerprint") != query_set_fingerprint:
            raise BaselineError(
                f"{self.path}: query set {query_set!r} changed (fingerprint "
                f"{qs.get('fingerprint')} recorded, {query_set_fingerprint} now). {REBASELINE}")

    def check_measured_alike(self, corpus: dict, settings: dict, query_set: str,
                             coverage: str = Record.coverage) -> None:
        """Raise BaselineError when this baseline measured under other settings, on another
        corpus of the same name, or by another coverage rule: what no changed document or
        question explains."""
        if corpus.get("identity"):
            self.check_corpus_identity(corpus["identity"])
        for name in COMPARED_SETTINGS:
            recorded = self.data["settings"].get(name, _RECORDED_BEFORE.get(name))
            now = settings.get(name, _RECORDED_BEFORE.get(name))
            if self.data["settings"] and recorded is not None and recorded != now:
                raise BaselineError(
                    f"{self.path}: recorded with {name}={recorded}, this run "
                    f"uses {name}={now}. {REBASELINE}")
        qs = self.data["query_sets"].get(query_set)
        stated = None if qs is None else qs.get("coverage", UNSTATED_COVERAGE)
        if qs is not None and stated != coverage:
            raise BaselineError(
                f"{self.path}: query set {query_set!r} was scored by the "
                f"{stated} coverage rule, this run by the {coverage} rule "
                "(the `coverage` setting; positional is the default for gold given as spans): "
                f"the numbers are not comparable. {REBASELINE}")

    @property
    def commit(self) -> str | None:
        """The git commit the project was at when the baseline was recorded, if it says."""
        return self.data.get("commit")

    def query_keys(self, query_set: str) -> list[str] | None:
        """The recorded questions' keys (Query.key) in order; None for a file recorded
        before they were kept."""
        return self.data["query_sets"].get(query_set, {}).get("keys")

    def view_documents(self, query_set: str) -> dict[str, str] | None:
        """doc id -> fingerprint of the set's view as recorded; None before they were kept."""
        return self.data["query_sets"].get(query_set, {}).get("documents")

    def record(self, rec: Record) -> int:
        """Record one entry; returns how many other entries it dropped. Entries measured on
        another corpus, under other settings or on another version of a query set are
        dropped: kept, they would later be compared against queries they were not measured
        on."""
        corpus, settings = rec.corpus, rec.settings
        query_sets = {rec.query_set: {"fingerprint": rec.query_set_fingerprint} | (
            {"coverage": rec.coverage} if rec.coverage != UNSTATED_COVERAGE else {}) | (
            {"keys": rec.query_keys} if rec.query_keys is not None else {}) | (
            {"documents": rec.view_documents} if rec.view_documents is not None else {})}
        compared = {k: settings[k] for k in COMPARED_SETTINGS if k in settings}
        before = len(self.entries)
        old = dict(self.data["settings"])
        if old:
            old = {**{k: v for k, v in _RECORDED_BEFORE.items() if k in compared}, **old}
        if (self.data["corpus"].get("fingerprint") not in (None, corpus["fingerprint"])
                or old not in ({}, compared)):
            self.entries, self.data["query_sets"] = {}, {}
        for name, qs in query_sets.items():
            old = self.data["query_sets"].get(name)
            if old is not None and old != qs:
                self.entries = {k: v for k, v in self.entries.items()
                                if k.split("|")[2] != name}
        dropped = before - len(self.entries)
        self.data["corpus"] = {k: corpus[k] for k in ("name", "fingerprint", "identity")
                               if k in corpus}
        if "document_fingerprints" in corpus:
            self.data["documents"] = corpus["document_fingerprints"]
        if rec.commit:
            self.data["commit"] = rec.commit
        self.data["settings"] = compared
        self.data["query_sets"].update(query_sets)
        new, was = rec.entry, self.entries.get(rec.key)
        # A noise floor is measured against the entry's own numbers: it survives a re-record
        # only when nothing it was measured against changed.
        if was is not None and was.noise and was.same_measurement(new):
            new = with_noise(new, was.noise)
        self.entries[rec.key] = new
        return dropped

    def needs_update(self, rec: Record, tol: Tolerance) -> str | None:
        """Why the entry of this record should be rewritten under `failing`, or None."""
        entry = self.entries.get(rec.key)
        if entry is None:
            return "missing"
        try:
            self.check_comparable(rec.corpus, rec.settings, rec.query_set,
                                  rec.query_set_fingerprint, rec.coverage)
        except BaselineError:
            return "not comparable"
        if entry.chunks_hash != rec.entry.chunks_hash:
            return "chunks changed"
        if rec.entry.cut_rate > entry.cut_rate + tol.cut_slack:
            return "failed"
        try:
            verdicts = compare(rec.entry, entry, rec.settings["complete_at"], tol)
        except BaselineError:
            return "not comparable"
        return "failed" if any(v.status == "regressed" for v in verdicts) else None

    def stale(self, known_strategies: set[str]) -> list[str]:
        return sorted(k for k in self.entries if k.split("|")[0] not in known_strategies)

    def to_json(self) -> dict:
        return {**self.data, "entries": {k: e.to_json() for k, e in self.entries.items()}}

    def save(self) -> Path:
        """Write the file; called under the update lock (locked_for), so a temporary file
        beside it is a killed update's and is removed now. The folder gets a .gitignore of
        those files, so that `git add baselines` never commits one."""
        ignore_temporaries(self.path.parent)
        return atomic_write(self.path, dumps(self.to_json()), stale_after=0)


# What a baselines folder's .gitignore holds: the temporary files of writes (atomic_write).
GITIGNORE = "# temporary files of baseline updates (written by chunkeval)\n.*.tmp\n"


def ignore_temporaries(directory: str | Path) -> None:
    """Give the baselines folder a .gitignore of temporary files, unless it has one."""
    path = Path(directory) / ".gitignore"
    if not path.exists():
        try:
            atomic_write(path, GITIGNORE)
        except OSError:
            pass  # the baseline write that follows says what is wrong with the folder


def corpus_identity(source: str, rootdir: str | Path) -> str:
    """What tells two corpora of the same name apart: the built-in corpus's name, else the
    directory, relative to the rootdir when inside it (the same on every checkout)."""
    if str(source) in BUILTIN_CORPORA:
        return str(source)
    path = Path(source).expanduser().resolve()
    try:
        return "dir:" + path.relative_to(Path(rootdir).resolve()).as_posix()
    except ValueError:
        return "dir:" + path.as_posix()


def baseline_path(directory: str | Path, corpus_name: str) -> Path:
    """The baseline file of a corpus: its name made safe for a file name, in `directory`.
    Two corpora of one name share the name; the file's recorded identity keeps them apart."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(corpus_name).name)
    return Path(directory) / f"{safe.strip('.') or 'corpus'}.json"


@dataclass
class UpdateSummary:
    path: Path
    recorded: int = 0  # entries written from this run
    unchanged: int = 0  # selected entries left as they were (mode `failing`)
    dropped: int = 0  # entries of another corpus, settings or query-set version
    total: int = 0
    replaced: str | None = None  # why the old file was replaced whole
    reasons: dict[str, str] = field(default_factory=dict)  # key -> why it was rewritten
    stale: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"{self.recorded} {'entry' if self.recorded == 1 else 'entries'} recorded"]
        if self.reasons:
            why = Counter(self.reasons.values())
            parts[0] += " (" + ", ".join(f"{n} {w}" for w, n in sorted(why.items())) + ")"
        if self.unchanged:
            parts.append(f"{self.unchanged} selected entries passed and were kept as they were")
        if self.dropped:
            parts.append(f"{self.dropped} dropped (measured on another corpus, settings or "
                         "query-set version)")
        parts.append(f"{self.total} in the file")
        text = f"{self.path} ({', '.join(parts)})"
        if self.replaced:
            text += f"; the old file was replaced: {self.replaced}"
        return text


def update_file(path: str | Path, records: list[Record], mode: str = "all", *,
                identity: str | None = None, tolerance: Tolerance = DEFAULT_TOLERANCE,
                known_strategies: set[str] | None = None) -> UpdateSummary:
    """Merge this run's records into the baseline file, under a lock held from the read to
    the rename so that a concurrent update's entries are never lost.

    `mode` is one of UPDATE_MODES; entries no record names are never touched. Raises
    InputError for a file that is unreadable or invalid (unless mode is `replace`),
    BaselineError for a file made on another corpus (idem) or when the lock cannot be had."""
    if mode not in UPDATE_MODES:
        raise ConfigError(f"unknown update mode {mode!r}; one of {', '.join(UPDATE_MODES)}")
    path = Path(path)
    summary = UpdateSummary(path)
    with locked_for(path):
        try:
            baseline = Baseline.load(path)
            if identity is not None:
                baseline.check_corpus_identity(identity)
        except (InputError, BaselineError) as e:
            if mode != "replace":
                raise
            baseline, summary.replaced = Baseline(path), str(e)
        for rec in records:
            if identity:
                rec = replace(rec, corpus={**rec.corpus, "identity": identity})
            if mode == "failing":
                why = baseline.needs_update(rec, tolerance)
                if why is None:
                    summary.unchanged += 1
                    continue
                summary.reasons[rec.key] = why
            summary.dropped += baseline.record(rec)
            summary.recorded += 1
        baseline.save()
        summary.total = len(baseline.entries)
        if known_strategies is not None:
            summary.stale = baseline.stale(known_strategies)
    return summary


def record_noise(path: str | Path, measured: dict[str, tuple[BaselineEntry, dict[str, Noise]]],
                 *, identity: str | None = None) -> list[str]:
    """Write calibrated noise floors into the entries they were measured against, under the
    update lock; returns the keys written. `measured` maps an entry key to the calibration's
    own entry for it and the noise floor per metric. Raises BaselineError naming every entry
    that is missing or holds other numbers than the calibration measured: its floor would
    describe another baseline."""
    path = Path(path)
    how = ("record the baseline first (`pytest --update-baselines`), then calibrate again")
    if not path.is_file():
        raise BaselineError(f"{path}: no baseline file; {how}")
    with locked_for(path):
        baseline = Baseline.load(path)
        if identity is not None:
            baseline.check_corpus_identity(identity)
        wrong = []
        for k, (measured_entry, _) in measured.items():
            entry = baseline.entries.get(k)
            if entry is None:
                wrong.append(f"{k} (no entry)")
            elif (entry.chunks_hash != measured_entry.chunks_hash
                  or entry.per_query.get("coverage") != measured_entry.per_query["coverage"]):
                wrong.append(f"{k} (recorded from other chunks or another retriever version)")
        if wrong:
            raise BaselineError(f"{path}: cannot record the noise floor for "
                                f"{'; '.join(wrong)}; {how}")
        for k, (_, noise) in measured.items():
            baseline.entries[k] = with_noise(baseline.entries[k], noise)
        baseline.save()
    return sorted(measured)


@contextlib.contextmanager
def locked_for(path: Path):
    """The lock an update of the baseline file `path` holds from its read to its rename. A
    folder that cannot be written (full, read-only, under a file) is one BaselineError that
    names it: the file there is kept as it was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.parent, f"{path}: another run has been updating a baseline here for "
                                 f"{LOCK_TIMEOUT} s; try again when it has finished"):
            yield
    except OSError as e:
        raise BaselineError(f"{path.parent}: the baselines cannot be written there "
                            f"({e.strerror or e}); {path.name} is kept as it was") from None


@contextlib.contextmanager
def locked(directory: Path, timeout_message: str, timeout: float = LOCK_TIMEOUT):
    """An exclusive lock on the baselines directory, across processes, for a read-merge-write.
    flock on the directory itself: no lock file is left in the user's repository."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BaselineError(timeout_message) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


_SCALAR_LIST = re.compile(r"\[[^\[\]{}]*\]")


def dumps(data: dict) -> str:
    """Stable JSON for review: sorted keys, one key a line, each list of scalars on one line."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)
    return _SCALAR_LIST.sub(lambda m: re.sub(r"\n\s*", " ", m.group(0)).replace("[ ", "[")
                            .replace(" ]", "]"), text) + "\n"
