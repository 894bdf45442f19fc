"""Warnings a person can read: the problems of a run, one line per kind.

A docs project of a hundred files may give a hundred problems of one kind (each file uses
a Sphinx directive, each has autodoc); they print as one line with the count, what is counted
and up to three files. The full list stays in `corpus info --json`.

`strict` fails a run only on problems that change what is measured: a file or part of one
not read, text read wrongly. Problems that describe the input as it is (a file without
sections, autodoc text that lives in code) are printed and do not fail it. A problem
without a kind counts as changing what is measured.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .errors import Problem


@dataclass(frozen=True)
class Kind:
    says: str  # after "N files": what they have in common
    measured: bool  # it changes what is measured: `strict` fails on it


KINDS = {
    "not-read": Kind("not read (skipped or unreadable)", True),
    "rst-error": Kind("have reStructuredText errors (each file's other content is kept)", True),
    "rst-unknown-directive": Kind("use directives chunkeval does not know, read as plain "
                                  "text", True),
    "include-outside": Kind("include files from outside the corpus folder: skipped, nothing "
                            "of them read", True),
    "include-missing": Kind("include files that are not in the corpus folder: skipped", True),
    "rst-autodoc": Kind("use autodoc directives, read as their signature line only (the "
                        "text is in the project's code)", False),
    "rst-conf-value": Kind("use |version|, |release| or |today|, whose values are in conf.py "
                           "(not run): read as nothing", False),
    "no-sections": Kind("have no sections: each is read as one section", False),
    "unsupported": Kind("", False),
    "site": Kind("", False),  # which generator built the folder: a note, one line
}
EXAMPLES = 3


def measured(problem: Problem) -> bool:
    """Whether the problem changes what is measured (a kind nobody described does)."""
    kind = KINDS.get(problem.kind)
    return kind.measured if kind else True


def _key(problem: Problem) -> str:
    return problem.kind if problem.kind in KINDS and KINDS[problem.kind].says \
        else "message:" + problem.message


def summary(problems: list[Problem]) -> list[str]:
    """One line per kind of problem, in the order kinds first appear: the count of files,
    what they have, what is counted (names by use), and up to three of the files."""
    groups: dict[str, list[Problem]] = {}
    for p in problems:
        groups.setdefault(_key(p), []).append(p)
    lines = []
    for key, found in groups.items():
        if len(found) == 1:
            lines.append(str(found[0]))
            continue
        files = list(dict.fromkeys(p.path for p in found))
        says = KINDS[key].says if key in KINDS else found[0].message
        names = Counter(n for p in found for n in p.names)
        counted = ", ".join(f"{n} ({c})" for n, c in names.most_common(5))
        if len(names) > 5:
            counted += f" and {len(names) - 5} more"
        where = list(dict.fromkeys(f"{p.path}:{p.line}" if p.line is not None else p.path
                                   for p in found))
        shown = ", ".join(where[:EXAMPLES]) + (", …" if len(where) > EXAMPLES else "")
        count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        if len(found) > len(files):
            count += f" ({len(found)} places)"
        lines.append(f"{count} {says}" + (f": {counted}" if counted else "") + f"; e.g. {shown}"
                     if key in KINDS else f"{count}: {says}; e.g. {shown}")
    return lines


def strict_failure(problems: list[Problem]) -> str | None:
    """Under `strict`, the line saying why the run fails; None when no problem changes
    what is measured."""
    failing = [p for p in problems if measured(p)]
    if not failing:
        return None
    kinds = list(dict.fromkeys(KINDS[p.kind].says.split(":")[0] if p.kind in KINDS
                               and KINDS[p.kind].says else p.message for p in failing))
    shown = "; ".join(kinds[:EXAMPLES]) + ("; …" if len(kinds) > EXAMPLES else "")
    return f"strict: {len(failing)} problem(s) in the input change what is measured ({shown})"


def to_json(problem: Problem) -> dict:
    return {"path": problem.path, "line": problem.line, "kind": problem.kind,
            "message": problem.message, "names": list(problem.names),
            "measured": measured(problem)}


def from_json(data: dict) -> Problem:
    return Problem(data["path"], data["message"], data.get("line"), data.get("kind", ""),
                   tuple(data.get("names", ())))
