"""How a strategy's or a retriever's failure is said: one line, and the frames that are the
user's own code."""

from __future__ import annotations

import contextlib
import os
import sysconfig
import traceback
from pathlib import Path

from ..errors import ChunkevalError, ContractError, StrategyFailed
from ..model import Chunk


@contextlib.contextmanager
def retriever_failure(strategy: str, retriever: str):
    """A retriever that raises, or returns what its contract rules out, fails the strategy's
    result with it (one line), not the run. A setting it cannot use stays a ConfigError."""
    try:
        yield
    except StrategyFailed:
        raise
    except ContractError as e:
        problem = str(e).removeprefix(f"retriever {retriever!r}: ")
        raise StrategyFailed(strategy, problem, retriever=retriever) from e
    except ChunkevalError:
        raise
    except Exception as e:
        raise StrategyFailed(strategy, said(e), retriever=retriever,
                             detail=own_frames(e)) from e


def said(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def own_frames(e: BaseException, fallback: int = 4) -> str:
    """The frames of the traceback that are the user's own code: not chunkeval's, not the
    standard library's nor an installed package's; with none of those (a failure inside an
    installed library), the last `fallback` frames."""
    package = Path(__file__).parent.parent  # chunkeval's, not only this room's
    skip = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                      "platlib")} | {str(package)})
    every = traceback.extract_tb(e.__traceback__)
    frames = [f for f in every if not os.path.abspath(f.filename).startswith(skip)]
    return "".join(traceback.format_list(frames or every[-fallback:])).rstrip()


def kind(value) -> str:
    if isinstance(value, list):
        odd = next((c for c in value if not isinstance(c, Chunk)), None)
        return f"a list holding a {type(odd).__name__}"
    return f"a {type(value).__name__}"


