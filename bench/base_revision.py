"""The gate on a living corpus, on a real docs folder: a git repository made from it, a week
of real edits on a branch, and what each gate prints.

    # the repository: DOCS copied in, the block-packing splitter that `chunkeval init
    # --example-splitter` writes (800 characters), section-titles with bm25, lsa and hybrid,
    # baselines recorded and committed on main
    python bench/base_revision.py setup PROJECT --docs DOCS

    # on a branch: one page gets a paragraph, one page is added (--add FILE), one removed;
    # then plain pytest, the splitter cut to a third (plain and --chunkeval-base main), and
    # a harmless 800 -> 780 (--chunkeval-base main); each step's exit code and summary lines
    python bench/base_revision.py steps PROJECT --add FILE

    # the warm gate with --chunkeval-base against the plain gate: gate_vs_ragci.py measure
    python bench/gate_vs_ragci.py measure --cwd PROJECT --runs 7 \
        --run "plain=python -m pytest -q" --run "base=python -m pytest -q --chunkeval-base main"

Commands run with the Python running this script, in PROJECT, with the environment as it is
(set PYTHONPATH and CHUNKEVAL_CACHE there).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

PYPROJECT = '''[tool.chunkeval]
corpus = "docs"
query_sets = ["section-titles"]
splitters = ["team:split"]
retrievers = ["bm25", "lsa", "hybrid"]
'''

# What the steps print of a run: the summary's lines that say what was compared and decided.
SHOWN = re.compile(r"^(against |corpus changed|new since|removed since|FAILED|.*regressed|"
                   r"  \S+ \S+ \S+: recall_at_k|=+ .*(passed|failed).* =+$)")


def write_team(project: Path, size: int) -> None:
    """The splitter `chunkeval init --example-splitter` writes, packing blocks up to SIZE."""
    from chunkeval.cli.init import EXAMPLE_SPLITTER

    (project / "team.py").write_text(EXAMPLE_SPLITTER.replace("SIZE = 800", f"SIZE = {size}"),
                                     encoding="utf-8")


def sh(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def git(cwd: Path, *args: str) -> str:
    done = sh(cwd, "git", *args)
    if done.returncode:
        sys.exit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def pytest(cwd: Path, *args: str) -> tuple[int, float, list[str]]:
    t0 = time.perf_counter()
    done = sh(cwd, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf", *args)
    lines = [x for x in done.stdout.splitlines() if SHOWN.match(x)]
    return done.returncode, time.perf_counter() - t0, lines


def setup(project: Path, docs: Path) -> None:
    project.mkdir(parents=True)
    shutil.copytree(docs, project / "docs")
    write_team(project, 800)
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "-c", "user.name=team", "-c", "user.email=team@example.org", "commit", "-qm",
        "docs and the team's splitter")
    code, seconds, lines = pytest(project, "--update-baselines")
    print(f"pytest --update-baselines: exit {code}, {seconds:.1f} s", *lines, sep="\n  ")
    git(project, "add", "baselines")
    git(project, "-c", "user.name=team", "-c", "user.email=team@example.org", "commit", "-qm",
        "baselines")


def steps(project: Path, added: Path) -> None:
    def commit(message: str) -> None:
        git(project, "add", "-A")
        git(project, "-c", "user.name=team", "-c", "user.email=team@example.org", "commit",
            "-qm", message)

    def show(title: str, *args: str) -> None:
        code, seconds, lines = pytest(project, *args)
        print(f"{title}: exit {code}, {seconds:.1f} s", *lines, sep="\n  ", flush=True)

    git(project, "checkout", "-qb", "docs-week")
    pages = sorted((project / "docs").rglob("*.md"))
    edited, removed = pages[len(pages) // 3], pages[-1]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nThis page was reviewed this "
                      "week; the examples above run on the current release.\n",
                      encoding="utf-8")
    shutil.copy(added, project / "docs" / added.name)
    removed.unlink()
    print(f"edited {edited.relative_to(project)}, added docs/{added.name}, removed "
          f"{removed.relative_to(project)}")
    commit("a week of docs")
    show("docs only, plain pytest")
    write_team(project, 266)
    show("and the splitter's size cut to a third, plain pytest")
    show("the same, pytest --chunkeval-base main", "--chunkeval-base", "main")
    write_team(project, 780)
    show("a harmless 800 -> 780 instead, pytest --chunkeval-base main",
         "--chunkeval-base", "main")
    commit("splitter 780")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup")
    s.add_argument("project", type=Path)
    s.add_argument("--docs", type=Path, required=True)
    t = sub.add_parser("steps")
    t.add_argument("project", type=Path)
    t.add_argument("--add", type=Path, required=True, help="a page the branch adds")
    args = p.parse_args()
    if args.command == "setup":
        setup(args.project.resolve(), args.docs.resolve())
    else:
        steps(args.project.resolve(), args.add.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
