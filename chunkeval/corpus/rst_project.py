"""What a reStructuredText file's markup refers to beyond itself: the Project (the corpus
folder, every file's title and labelled sections, conf.py's version strings), read from the
files' lines before any is parsed, and the ParseState one parse keeps for its directives and
roles."""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Problem

RST_SUFFIXES = (".rst", ".rest")
_CONF_SUBSTITUTIONS = ("version", "release", "today")


@dataclass
class Project:
    """What a file's markup refers to beyond itself: the corpus folder (for include and
    literalinclude), every file's title and its labelled sections' titles (for :doc: and
    :ref:), and conf.py's version strings."""
    root: Path | None = None
    titles: dict[str, str] = field(default_factory=dict)  # doc path without suffix -> title
    labels: dict[str, str] = field(default_factory=dict)  # label -> section title
    conf: dict[str, str] = field(default_factory=dict)  # substitution -> value
    # the files include and literalinclude read (path -> sha256), beside the corpus's own
    read: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Path | None, sources: dict[str, str]) -> "Project":
        """The project of the reStructuredText `sources` (doc id -> text) under `root`."""
        project = cls(root.resolve() if root else None)
        for doc_id, text in sources.items():
            title, labels = _titles(text)
            if title:
                project.titles[stem(doc_id)] = title
            project.labels.update(labels)
        conf = project.root / "conf.py" if project.root else None
        if conf and conf.is_file():
            project.conf = _conf_strings(conf)
            project.read[str(conf)] = sha256(conf)  # a new version string: parse again
        return project


def stem(doc_id: str) -> str:
    for suffix in RST_SUFFIXES:
        if doc_id.lower().endswith(suffix):
            return doc_id[:-len(suffix)]
    return doc_id


_UNDERLINE = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_LABEL = re.compile(r"^\.\. _([^:`]+|`[^`]+`):\s*$")


def _plain(title: str) -> str:
    """A title's text without its inline markup."""
    title = re.sub(r":[\w:.+-]+:`([^`]*)`", lambda m: role_title(m.group(1)), title)
    title = re.sub(r"``(.+?)``", r"\1", title)
    title = re.sub(r"(\*\*|\*|`)(.+?)\1_?", r"\2", title)
    return " ".join(title.split())


def role_title(text: str) -> str:
    m = re.match(r"^(.+?)\s*<[^<>]*>$", text, re.S)
    return m.group(1) if m else text.lstrip("~!.")


def _titles(text: str) -> tuple[str, dict[str, str]]:
    """The file's first section title and its labels' section titles, read from the lines
    (an underlined line is a title; a `.. _label:` before it names it)."""
    lines = text.splitlines()
    first, labels, pending = "", {}, []
    for i, line in enumerate(lines):
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1).strip("`").lower())
            continue
        if not line.strip() or _UNDERLINE.match(line) and i + 1 < len(lines) and \
                lines[i + 1].strip() and i + 2 < len(lines) and _UNDERLINE.match(lines[i + 2]):
            continue  # a blank line, or the overline of a title
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not line.startswith((" ", "\t")) and _UNDERLINE.match(nxt) and \
                len(nxt.rstrip()) >= len(line.rstrip()) - 1:
            title = _plain(line)
            first = first or title
            for label in pending:
                labels[label] = title
        pending = []
    return first, labels


def _conf_strings(conf: Path) -> dict[str, str]:
    """The plain strings conf.py assigns to version, release and today (it is not run)."""
    try:
        tree = ast.parse(conf.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in _CONF_SUBSTITUTIONS:
                    found[target.id] = node.value.value
    return found


def sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


@dataclass
class ParseState:
    """One parse's context, reached from directives and roles through the settings."""
    project: Project
    source: Path | None  # the file being read, for relative include paths
    doc_id: str
    where: str
    problems: list[Problem] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # uses of directives read as plain
    autodoc: list[str] = field(default_factory=list)
    module: str = ""
    in_object: int = 0  # nesting inside a Python object's body


def state_of(document) -> ParseState:
    return document.settings.chunkeval_state
