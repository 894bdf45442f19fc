"""Turns the chunkeval pytest plugin on for this repository.

An installed chunkeval registers the plugin through its pytest11 entry point; load it here
only when that has not happened (a source checkout on sys.path, or autoload disabled).
"""

import os
from importlib.metadata import entry_points

_autoloaded = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and any(
    ep.value == "chunkeval.plugin" for ep in entry_points(group="pytest11"))
pytest_plugins = [] if _autoloaded else ["chunkeval.plugin"]
