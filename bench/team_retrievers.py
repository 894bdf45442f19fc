"""The warm gate of an outside project whose retriever is the team's own embedding function.

A team's retriever is run every session unless it declares a `cache_key`; a declared one is
re-run on a sample of the session's texts. This sets up the project whose warm `pytest` shows
what that costs: a folder of Markdown docs (e.g. a MkDocs site's docs/en/docs), the
400-character splitter of gate_vs_ragci.py, and a word-hashing embedder in numpy (words
hashed into 256 dimensions, counted), as `teamembed:embed` (declares nothing) or
`teamembed:kept` (declares a key; its attribute is ignored by versions before it).

    python bench/team_retrievers.py setup PROJECT --docs DOCS [--declared] \
        --record "PYTHONPATH=CHECKOUT python -m pytest -q --update-baselines"

    python bench/gate_vs_ragci.py measure --cwd . --runs 7 \
        --run "before=cd P1 && PYTHONPATH=OLD CHUNKEVAL_CACHE=C1 python -m pytest -q" \
        --run "after=cd P2 && PYTHONPATH=NEW CHUNKEVAL_CACHE=C2 python -m pytest -q" ...

`setup` writes the project and records its baselines with the `--record` shell line (run in
the project); `measure` (gate_vs_ragci.py) times alternating warm runs and prints medians.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from gate_vs_ragci import SPLITTER

EMBEDDER = '''"""The team's retriever: words hashed into DIM dimensions and counted (a
stand-in for a small model: it embeds every text it is given, in numpy)."""
import re
import zlib

import numpy as np

DIM = 256
WORD = re.compile(r"\\w+")


def embed(texts):
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        ids = [zlib.crc32(w.encode()) % DIM for w in WORD.findall(text.lower())]
        out[i] = np.bincount(ids, minlength=DIM)
    return out


embed.retriever_name = "team"
embed.version = "1"


def kept(texts):
    return embed(texts)


kept.retriever_name = "team"
kept.version = "1"
kept.cache_key = "hashing-256"
'''


def setup(project: Path, docs: Path, declared: bool, record: str) -> None:
    project.mkdir(parents=True, exist_ok=True)
    shutil.copytree(docs, project / "docs", dirs_exist_ok=True)
    (project / "chunking.py").write_text(SPLITTER, encoding="utf-8")
    (project / "teamembed.py").write_text(EMBEDDER, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "team-docs"\nversion = "0"\n\n[tool.chunkeval]\ncorpus = "docs"\n'
        'splitters = ["chunking:split"]\nreference = []\n'
        f'retrievers = ["teamembed:{"kept" if declared else "embed"}"]\nk = 5\n',
        encoding="utf-8")
    print("$", record, flush=True)
    subprocess.run(["bash", "-c", record], cwd=project, check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="a project on a folder of documents, its baselines recorded")
    s.add_argument("project", type=Path)
    s.add_argument("--docs", type=Path, required=True)
    s.add_argument("--declared", action="store_true",
                   help="the retriever declares a cache key (teamembed:kept)")
    s.add_argument("--record", required=True, metavar="COMMAND",
                   help="the shell line that records the baselines, run in the project")
    args = p.parse_args()
    setup(args.project.resolve(), args.docs.resolve(), args.declared, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
