"""Every error chunkeval reports to its user, and the warning record of bad input.

One hierarchy, so that the command line and the pytest plugin catch `ChunkevalError` alone:
anything else that escapes is a bug in chunkeval and shows its traceback.

    ChunkevalError
    ├── InputError      a file the user gave is unreadable or malformed (names file and line)
    ├── ConfigError     a setting, option or MODULE:ATTR that chunkeval cannot use
    ├── UnknownName     a strategy, retriever, analyzer, metric or query set nobody registered
    ├── ContractError   an outside retriever or length measure returned what it must not
    ├── StrategyFailed  a strategy could not be scored: its splitter, or a retriever on its
    │                   chunks, raised or broke its contract (the run goes on without it)
    ├── CorpusError     a corpus cannot be had at all (fetch, unpack, no readable document)
    └── BaselineError   a baseline cannot be compared with this run, or cannot be written
"""

from __future__ import annotations

from dataclasses import dataclass

# The exit status of a gate that could not compare: no baseline and no base revision, or the
# corpus and the chunking both changed with nothing to compare with. 1 is a regression.
EXIT_NOT_COMPARED = 6


class ChunkevalError(Exception):
    """Something the user can fix; the message says what and, where it helps, how."""


class InputError(ChunkevalError):
    """Bad input a user can fix: names the file (and line) and the problem."""

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path, self.message, self.line = str(path), message, line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ConfigError(ChunkevalError):
    """A setting has a value chunkeval cannot use; the message names where it was given."""


class OutputError(ChunkevalError):
    """Outputs could not be written; the message names where and why, and what was kept."""


class UnknownName(ChunkevalError, LookupError):
    """A name that is not registered; the message lists the known ones."""

    def __init__(self, what: str, name: str, known, where: str | None = None, hint: str = ""):
        self.what, self.name = what, name
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unknown {what} {name!r}; known: {', '.join(known) or 'none'}"
                         + (f" ({hint})" if hint else ""))


class ContractError(ChunkevalError):
    """An outside retriever or length measure gave what its contract rules out (a vector of
    the wrong shape, an index without search, a length that is no count); the message names
    it. A splitter's broken contract is a StrategyFailed."""


class StrategyFailed(ChunkevalError):
    """A strategy that cannot be scored on a query set: its splitter (or, with `retriever`,
    a retriever on its chunks) raised or broke its contract. The message is one line naming
    the strategy, the retriever and the document; `detail` holds the frames of the user's own
    code that raised, for a reader who asks for them."""

    def __init__(self, strategy: str, problem: str, *, retriever: str | None = None,
                 document: str | None = None, detail: str = ""):
        self.strategy, self.problem, self.retriever = strategy, problem, retriever
        self.document, self.detail = document, detail
        what = f"strategy {strategy!r}" + (f", retriever {retriever!r}" if retriever else "")
        where = f" on {document}" if document else ""
        super().__init__(f"{what} failed{where}: {one_line(problem)}")

    def __reduce__(self):  # a worker process sends it back whole
        return _rebuilt, (self.strategy, self.problem, self.retriever, self.document,
                          self.detail)


def _rebuilt(strategy, problem, retriever, document, detail) -> StrategyFailed:
    return StrategyFailed(strategy, problem, retriever=retriever, document=document,
                          detail=detail)


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line, at most `limit` characters: what an exception of the user's code
    says goes into a message that must stay one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


class CorpusError(ChunkevalError):
    """The corpus cannot be had at all; the message tells the user what to do."""


class BaselineError(ChunkevalError):
    """The baseline cannot be compared with this run; the message says how to fix that."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A warning about one input file that did not stop the rest from loading."""

    path: str
    message: str
    line: int | None = None
    # What sort of problem it is (a key of chunkeval.problems.KINDS): warnings are printed
    # one line per kind. "" for one without a kind: its message is its kind.
    kind: str = ""
    # What the kind's line counts across files (the directive names a file uses...).
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


# The exit code of a gate that could not compare at all: no baseline and no base revision, or
# a corpus and its chunking changed together with no base to measure against (0 and 1 are a
# pass and a regression; pytest's own 2-5 stay pytest's).
EXIT_NOT_COMPARED = 6
