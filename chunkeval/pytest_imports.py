"""chunkeval's own modules load as Python compiled them, not through pytest's assertion
rewriting.

pytest rewrites the asserts of every module of a distribution that ships a pytest plugin, so
that a failing assert in a plugin's helper explains itself. chunkeval's failures are its
own messages (`pytest.fail` with the numbers), not asserts, and rewriting costs every run:
pytest parses and compiles each module from its source, and keeps the result only where it
may write bytecode, which CI images often forbid (PYTHONDONTWRITEBYTECODE), while the
compiled files pip installed beside the sources go unused. The other packages chunkeval's
dependencies and extras install that ship a pytest plugin are loaded the same way:
Hypothesis, which chunkeval imports for its invariant items (and Hypothesis's own plugin
for its summary), pytest-xdist, pytest-benchmark (the test extra), and LangSmith and AnyIO,
which LangChain's splitters (the langchain extra) bring and whose plugins are imported into
every run (LangSmith's imports its client). Their asserts are their own consistency checks,
never a project's tests. (A plugin that pytest loads before chunkeval's is rewritten all the
same: pytest loads them in the order the installed distributions are listed.)

The modules a project's tests are in, its conftest files and every other plugin are
rewritten as before; outside pytest nothing changes. This module and the package's
`__init__`, imported before the finder is in place, say PYTEST_DONT_REWRITE (pytest's own
opt-out, which spares the rewriting but not the compiling).
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder

# Top-level packages loaded without rewriting: chunkeval and the plugin-carrying packages its
# dependencies and extras install.
PLAIN = ("chunkeval", "hypothesis", "pytest_benchmark", "xdist", "langsmith", "anyio")
REWRITER = "_pytest.assertion.rewrite"


class PlainFinder:
    """A meta path finder ahead of pytest's: the ordinary spec (and so the compiled file)
    for the PLAIN packages, nothing for anything else."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        if name.partition(".")[0] not in PLAIN:
            return None
        return PathFinder.find_spec(name, path, target)

    @staticmethod
    def invalidate_caches() -> None:
        pass


def install() -> None:
    """Put PlainFinder before pytest's rewriting hook, when pytest has one installed."""
    if REWRITER not in sys.modules:
        return
    hooks = [i for i, f in enumerate(sys.meta_path) if type(f).__module__ == REWRITER]
    if not hooks or PlainFinder in sys.meta_path[:hooks[0]]:
        return
    if PlainFinder in sys.meta_path:  # behind the hook of a later in-process session
        sys.meta_path.remove(PlainFinder)
    sys.meta_path.insert(hooks[0], PlainFinder)
