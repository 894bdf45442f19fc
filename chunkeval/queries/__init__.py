"""Query sets: questions with a gold answer, and the corpus view they are measured on.

A set is built from the corpus itself (`builders.py`: FAQ headings, "Q. / A." pairs,
section titles) or read from a user's JSONL file (`jsonl.py`).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..model import Corpus, QuerySet
from ..results import DEFAULTS
from .builders import BUILDERS, build, is_question, normalize, query_leaks, strip_number
from .jsonl import read_jsonl


def build_query_set(corpus: Corpus, spec: str, *, max_queries: int = DEFAULTS.max_queries,
                    seed: int = DEFAULTS.seed, use_cache: bool = False) -> QuerySet:
    """The query set named by `spec`: a builder in BUILDERS, or the path of a JSONL file
    with one {"id", "query", "doc", and "answer" | "answers" | "spans" | "start"+"end"}
    object a line (`use_cache`: read through the query cache, jsonl.read_jsonl)."""
    if spec in BUILDERS:
        return build(corpus, spec, max_queries, seed)
    path = Path(spec)
    if path.is_file():
        return read_jsonl(corpus, path, max_queries, seed, use_cache)
    if not path.exists() and (path.suffix or len(path.parts) > 1):  # meant as a file
        raise InputError(spec, "no such file (a query set is one of "
                               f"{', '.join(BUILDERS)} or a JSONL file)")
    raise InputError(spec, "not a query set: give one of " + ", ".join(BUILDERS)
                     + " or the path of a JSONL file" + (" (this is a directory)" if path.is_dir() else ""))


def build_default_query_sets(corpus: Corpus, *, max_queries: int = DEFAULTS.max_queries,
                             seed: int = DEFAULTS.seed) -> list[QuerySet]:
    """The sets of every builder that gives at least one query on this corpus, in BUILDERS
    order."""
    built = [build_query_set(corpus, name, max_queries=max_queries, seed=seed)
             for name in BUILDERS]
    return [qs for qs in built if len(qs)]


def default_query_sets(corpus: Corpus) -> list[str]:
    """The names of the builders that give at least one query on this corpus."""
    return [qs.name for qs in build_default_query_sets(corpus, max_queries=1)]




__all__ = ["BUILDERS", "build_default_query_sets", "build_query_set", "default_query_sets",
           "is_question", "normalize", "query_leaks", "strip_number"]
