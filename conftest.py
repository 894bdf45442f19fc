"""Turns the chunkeval pytest plugin on for this repository.

An installed chunkeval registers the plugin through its pytest11 entry point; load it here
only when that has not happened (a source checkout on sys.path, or autoload disabled).
"""

import os
from importlib.metadata import entry_points

_autoloaded = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and any(
    ep.value == "chunkeval.plugin" for ep in entry_points(group="pytest11"))
pytest_plugins = [] if _autoloaded else ["chunkeval.plugin"]


def pytest_collection_finish(session):
    """The suite's own processes keep the collected tests out of the garbage collector's
    sweeps and sweep the young objects less often: the full sweeps over the corpora, chunks
    and results the tests hold were 6% of a fresh run's CPU (bench/results/suite-time.md).
    What the tests check is the same; only when cyclic garbage is freed changes."""
    import gc
    gc.collect()
    gc.freeze()
    gc.set_threshold(7000, 10, 10)  # the first of the defaults (700, 10, 10) ten times
