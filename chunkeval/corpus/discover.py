"""Which folder of a project holds its documents: what `chunkeval init` proposes as the
corpus when none is named."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from .sources import format_of

# Folders that hold tools, not the project's documents.
SKIP_DIRS = {"node_modules", "venv", "env", "site-packages", "build", "dist", "__pycache__",
             "baselines", "chunkeval-results"}


def find_documents(root: Path) -> tuple[Path | None, int]:
    """The folder below `root` holding the most documents chunkeval reads, and how many."""
    counts: Counter[Path] = Counter()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        here = Path(folder)
        if here == root:
            continue
        n = sum(1 for f in files if format_of(f) is not None)
        for parent in [here, *here.parents]:
            if parent == root:
                break
            counts[parent] += n
    if not counts or counts.most_common(1)[0][1] == 0:
        return None, 0
    # the deepest folder that still holds the most files: docs/html rather than docs
    best = max(counts.values())
    folder = max((p for p, n in counts.items() if n == best), key=lambda p: len(p.parts))
    return folder, best
