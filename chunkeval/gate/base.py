"""The base revision as the baseline: the team's code as it is at a git revision, run on
this run's corpus and query sets.

A BaseRun reads the project at the revision out of git (`git archive` into a temporary
folder) and runs it in a child process (`python -m chunkeval.against_base`), so that the
splitters, retrievers and configuration of the two revisions never share a module. The child
takes the revision's `[tool.chunkeval]` for what is evaluated (splitters, strategies,
reference, retrievers, outside retrievers) and this run's corpus, query sets and measuring
settings (MEASURING), and writes one baseline entry a case. The parent reads them as a
Baseline, so the paired test, its tolerance and its messages are those of a baseline file.
The child runs beside the current side from the start; equal chunks on both sides share one
result through the result cache, and chunkeval's own strategies with its own retrievers are
not run there at all (the same code on both sides).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BaselineError
from ..store import atomic_write
from .baselines import Baseline

# This run's settings the child takes (what is measured, and how), so that both sides are
# measured on the same things; the rest is the revision's own.
MEASURING = ("corpus", "query_sets", "k", "budget", "length", "coverage", "max_queries",
             "max_document_mb", "analyzer", "cache", "result_cache")
FETCH_HINT = ("a shallow CI checkout needs the base fetched: `fetch-depth: 0` on "
              "actions/checkout in GitHub Actions, or `git fetch origin main`")


@dataclass(frozen=True)
class Revision:
    name: str  # as the user gave it: main, origin/main, a tag, a commit
    commit: str
    toplevel: Path  # the repository's work tree

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def label(self) -> str:
        return self.short if self.name.startswith(self.short) else f"{self.name} at {self.short}"


def measuring_settings(config) -> dict:
    """The settings of this run (a config.Config) a base revision's run measures with."""
    return {n: list(v) if isinstance(v, tuple) else v
            for n in MEASURING if (v := config.values[n]) is not None}


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True)
    except FileNotFoundError:
        raise BaselineError("git is not installed: a base revision is read with git") from None


def resolve(root: Path, name: str) -> Revision:
    """The commit `name` names in the repository holding `root`; BaselineError (one line)
    when root is in no repository or the revision is not in it."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaselineError(f"{root}: not a git repository, so base revision {name!r} cannot "
                            "be read")
    toplevel = Path(top.stdout.decode().strip())
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    if found.returncode != 0:
        shallow = _git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == b"true"
        raise BaselineError(f"base revision {name!r}: unknown in {toplevel}"
                            + (" (a shallow clone)" if shallow else "") + f"; {FETCH_HINT}")
    return Revision(name, found.stdout.decode().strip(), toplevel)


def head(root: Path) -> str | None:
    """The commit checked out at root, or None outside a repository (or before any commit)."""
    try:
        found = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except BaselineError:
        return None
    return found.stdout.decode().strip() or None if found.returncode == 0 else None


def committed_with(path: Path) -> str | None:
    """The commit that last changed the file at `path`, when the file is committed as it is
    now: a baseline committed together with the code that made it names that code better
    than the commit checked out when it was recorded (which lacks uncommitted changes)."""
    path = Path(path).resolve()
    try:
        same = _git(path.parent, "diff", "--quiet", "HEAD", "--", path.name)
        found = _git(path.parent, "log", "-1", "--format=%H", "--", path.name)
    except BaselineError:
        return None
    commit = found.stdout.decode().strip()
    if same.returncode != 0 or found.returncode != 0 or not commit:
        return None
    # In a shallow clone the oldest commit it holds seems to add every file, baselines
    # included: it names the clone's depth, not the code that made the numbers.
    return None if _shallow_boundary(path.parent, commit) else commit


def _shallow_boundary(cwd: Path, commit: str) -> bool:
    where = _git(cwd, "rev-parse", "--git-path", "shallow").stdout.decode().strip()
    shallow = cwd / where if where else None
    return bool(shallow and shallow.is_file()
                and commit in shallow.read_text(encoding="utf-8").split())


def has_commit(root: Path, commit: str) -> bool:
    try:
        return _git(root, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
    except BaselineError:
        return False


def checkout(rev: Revision, into: Path) -> None:
    """The revision's files (git archive) unpacked into `into`."""
    proc = subprocess.Popen(["git", "archive", "--format=tar", rev.commit], cwd=rev.toplevel,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(into, filter="data")
    except tarfile.TarError as e:  # a link out of the tree, say: refused, not followed
        proc.kill()
        proc.wait()
        raise BaselineError(f"base revision {rev.label}: its files cannot be unpacked: "
                            f"{e}") from None
    if proc.wait() != 0:
        raise BaselineError(f"base revision {rev.label}: git archive failed: "
                            f"{proc.stderr.read().decode(errors='replace').strip()}")


@dataclass
class BaseSide:
    """What the base revision measured: a baseline entry a case, the strategies it had and
    those whose splitter (or a retriever on their chunks) failed there."""

    revision: Revision
    baseline: Baseline
    strategies: list[str]
    failed: dict[str, str] = field(default_factory=dict)  # strategy -> its one-line error
    # cases of chunkeval's own code on both sides: their base result is this side's
    same: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        return self.revision.label


class BaseRun:
    """A base revision's run, started now in a child process and read when first needed."""

    def __init__(self, root: Path, name: str, given: dict):
        """`given`: this run's settings the child takes as its own (measuring_settings)."""
        self.revision = resolve(root, name)
        self._folder = Path(tempfile.mkdtemp(prefix="chunkeval-base-"))
        self._side: BaseSide | None = None
        self._error: BaselineError | None = None
        try:
            checkout(self.revision, self._folder / "tree")
            at = self._folder / "tree" / Path(root).resolve().relative_to(
                self.revision.toplevel.resolve())
            order = {"root": str(at), "given": given, "out": str(self._folder / "out.json")}
            atomic_write(self._folder / "order.json", json.dumps(order))
            # the child imports this chunkeval and the revision's own modules, from its root
            env = dict(os.environ)
            here = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "chunkeval.against_base",
                 str(self._folder / "order.json")],
                cwd=at, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise

    def side(self) -> BaseSide:
        """The base side's entries, once the child has finished; BaselineError naming the
        revision when it could not measure at all."""
        if self._error is not None:
            raise self._error
        if self._side is None:
            try:
                _, err = self._proc.communicate()
                out = self._folder / "out.json"
                data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            finally:
                shutil.rmtree(self._folder, ignore_errors=True)
            if "error" in data or "entries" not in data:
                said = data.get("error") or err.decode(errors="replace").strip().splitlines()
                said = said if isinstance(said, str) else (said[-1] if said else "no output")
                # the revision's files as the user knows them, not as unpacked here
                said = said.replace(str(self._folder / "tree") + os.sep, "")
                self._error = BaselineError(f"base revision {self.revision.label}: {said}")
                raise self._error
            baseline = Baseline(Path(self.revision.label), {
                "schema": 1, "corpus": {}, "settings": {},
                "query_sets": {n: {"fingerprint": f, "keys": k}
                               for n, (f, k) in data["query_sets"].items()}})
            from .entry import BaselineEntry

            baseline.entries = {k: BaselineEntry.from_json(e, self.revision.label)
                                for k, e in data["entries"].items()}
            self._side = BaseSide(self.revision, baseline, data["strategies"], data["failed"],
                                  set(data["same"]))
        return self._side

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self._folder, ignore_errors=True)
