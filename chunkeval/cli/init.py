"""`chunkeval init`: find the project's documents, judge the built-in query sets on them and
write a commented [tool.chunkeval] section (and, if asked, a splitter to start from)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from string import Template

from .. import config, strategies
from ..corpus import load_corpus
from ..corpus.debian import BUILTIN_CORPORA
from ..corpus.discover import find_documents
from ..errors import ChunkevalError, ConfigError
from ..gate import baselines, verdict
from ..gate.baselines import ignore_temporaries
from ..gate.power import set_power
from ..queries import build_default_query_sets
from ..results import DEFAULTS
from ..store import atomic_write
from .parser import EXAMPLE_MODULE, EXPERIMENT_SIZE

TEMPLATES = Path(__file__).parent / "templates"


def _template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


EXAMPLE_SPLITTER = _template("splitter.py")


def init_command(args) -> int:
    root = Path.cwd()
    pyproject = root / "pyproject.toml"
    if config.read_section(pyproject) is not None:
        raise ConfigError(f"{pyproject} already has a {config.SECTION} section; edit it there")
    if args.docs:
        docs = Path(args.docs)
        if not docs.is_dir():
            raise ConfigError(f"--docs {args.docs}: not a directory")
        docs = docs.resolve()
    else:
        docs, n = find_documents(root)
        if docs is None:
            raise ConfigError(f"no HTML, Markdown or text files in any folder below {root}; "
                             "pass --docs DIR")
        print(f"documents: {docs.relative_to(root)} ({n} files)")
    try:
        built = build_default_query_sets(load_corpus(str(docs)))
    except ChunkevalError as e:
        raise ConfigError(f"{docs}: {e}") from None
    # Every set that found queries is written, as the run would use it anyway: the file says
    # what the run does. Which of them gate is said here and in the file, from the same power.
    tol = verdict.DEFAULT_TOLERANCE  # the section's retrievers, every set: the widest family
    family = len(config.LEXICAL_RETRIEVERS) * len(built) * len(tol.gated)
    sets = [qs.name for qs in built if len(qs)]
    notes = []  # (set, one line on whether it gates), for the terminal and the file
    gating = []
    for qs in built:
        power = set_power(qs.name, len(qs), alpha=tol.alpha, min_effect=tol.min_effect,
                          family=family)
        if power.gates:
            gating.append(qs.name)
        notes.append((qs.name, power.before_baseline()))
        print(f"query set {notes[-1][0]}: {notes[-1][1]}")
    example = root / f"{EXAMPLE_MODULE}.py"
    if args.example_splitter and example.exists():
        raise ConfigError(f"{example} exists; remove it or leave out --example-splitter")
    rel = os.path.relpath(docs, root)
    if rel in BUILTIN_CORPORA:  # a bare name would mean the built-in corpus
        rel = f"./{rel}"
    section = _section(rel, sets, args.example_splitter, notes)
    old = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if args.example_splitter:
        atomic_write(example, EXAMPLE_SPLITTER)
        print(f"wrote {example.name}: a paragraph-packing splitter to start from")
    atomic_write(pyproject, old + ("\n" if old and not old.endswith("\n\n") else "") + section)
    print(f"wrote {config.SECTION} to {pyproject}")
    # A baseline update killed mid-write leaves a temporary file there: never to be committed.
    ignore_temporaries(root / baselines.DIRECTORY)
    print(f"wrote {baselines.DIRECTORY}/.gitignore (temporary files of baseline updates)")
    if not gating:
        print(("no built-in query set can gate on these documents" if sets else
               "no built-in query set found queries in these documents")
              + ": write your own questions as JSONL (id, query, doc, answer) and list the "
              "file in query_sets")
    print("next:\n  pytest --update-baselines   # record the baselines; commit baselines/\n"
          "  pytest                      # then every change is gated against them")
    if args.example_splitter:
        print(f"then try one change the gate catches: set SIZE = {EXPERIMENT_SIZE} in "
              f"{example.name} and run `pytest`: the chunks get too small to hold an answer, and "
              "test_recall[split-...] fails with the drop in points")
    return 0


def _section(docs: str, sets: list[str], example: bool,
             notes: list[tuple[str, str]]) -> str:
    def toml_list(items) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    splitters = (f"splitters = {toml_list([EXAMPLE_MODULE + ':split'])}" if example
                 else '# splitters = ["mychunker:split"]')
    query_sets = (f"query_sets = {toml_list(sets)}" if sets
                  else '# query_sets = ["questions.jsonl"]')
    judged = "".join(f"#   {name}: {note}\n" for name, note in notes)
    min_effect = config.BY_NAME["min_effect"].default
    return Template(_template("section.toml")).substitute(
        corpus=json.dumps(docs), judged=judged, query_sets=query_sets, splitters=splitters,
        reference=toml_list(strategies.REFERENCE),
        retrievers=toml_list(config.LEXICAL_RETRIEVERS),
        retriever_names=", ".join(config.LEXICAL_RETRIEVERS), k=DEFAULTS.k,
        budget=DEFAULTS.budget, strict=json.dumps(config.BY_NAME["strict"].default),
        min_effect=f"{min_effect:g}", min_effect_points=f"{min_effect * 100:g}")
