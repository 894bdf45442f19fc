"""What a Markdown corpus's documents hold once read as a reader sees them.

Loads a directory of Markdown (no cache) and prints one JSON line: documents, characters
(all, and non-space), characters each rule removed, and the checks of the "shows it" list:
how many characters of the files' HTML comments (outside code) are still in a document's
text, and how many `{* … *}` include markers and `{ #anchor }` attribute lists are left.

    python bench/markdown_view.py DOCS_DIR
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from chunkeval.corpus.markdown import _decode, _markdown
from chunkeval.corpus.sources import load_corpus

COMMENT = re.compile(r"<!--[\s\S]*?-->")


def comment_chars_left(root: Path, corpus) -> int:
    """Characters of the files' HTML comments (outside fences and indented code) that a
    document's text still holds."""
    left = 0
    for doc in corpus.documents:
        raw, _ = _decode((root / doc.id).read_bytes(), doc.id, "Markdown")
        code = set()
        for tok in _markdown().parse(raw):
            if tok.type in ("fence", "code_block") and tok.map:
                code.update(range(*tok.map))
        for m in COMMENT.finditer(raw):
            if raw.count("\n", 0, m.start()) in code:
                continue
            left += sum(doc.text_offset(i) is not None for i in range(m.start(), m.end()))
    return left


def main(root: str) -> None:
    path = Path(root)
    corpus = load_corpus(root, use_cache=False, progress=False)
    removed: Counter = Counter()
    for doc in corpus.documents:
        removed.update(dict(doc.removed))
    texts = [d.text for d in corpus.documents]
    print(json.dumps({
        "documents": len(corpus.documents),
        "problems": [str(p) for p in corpus.problems if "unsupported" not in p.message],
        "chars": sum(map(len, texts)), "non_space_chars": corpus.chars,
        "removed": dict(sorted(removed.items())),
        "comment_chars_left": comment_chars_left(path, corpus),
        "include_markers_left": sum(len(re.findall(r"\{\*.*?\*\}", t)) for t in texts),
        "anchors_left": sum(len(re.findall(r"\{ ?#[\w-]+ ?\}", t)) for t in texts),
    }, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1])
