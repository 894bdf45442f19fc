"""What the property tests' generated documents cost and look like: `chunkeval.testing.documents()`
drawn through @given (the engine's own mix of fresh draws and mutations) for seeds 0..N-1,
150 documents each, in a test that does nothing else. Prints one JSON line: the CPU seconds
of the draws and the documents' shapes (text length, blocks and their kinds, the longest
word with nowhere to break, the share of Japanese characters, lines of pre blocks and
paragraphs, rows of tables). Run it on two trees (PYTHONPATH) to compare a change.

    python bench/generated_documents.py [--seeds 8] [--first 0]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter

from hypothesis import given, seed, settings

from chunkeval.testing import JAPANESE, documents


def draw(seeds: range) -> tuple[float, list]:
    docs, cpu = [], 0.0
    for n in seeds:
        @seed(n)
        @settings(max_examples=150, deadline=None, database=None)
        @given(doc=documents())
        def keep(doc):
            docs.append(doc)

        start = time.process_time()
        keep()
        cpu += time.process_time() - start
    return cpu, docs


def shapes(docs: list) -> dict:
    def mean(xs):
        return round(statistics.mean(xs), 2) if xs else 0

    def block_lines(kind):
        return [doc.text[b.start:b.end].split("\n") for doc in docs for b in doc.blocks
                if b.kind == kind]

    kinds = Counter(b.kind for doc in docs for b in doc.blocks)
    text = "".join(doc.text for doc in docs)
    japanese = set(JAPANESE)
    pre = block_lines("pre")
    return {
        "documents": len(docs),
        "text_chars": mean([len(doc.text) for doc in docs]),
        "blocks": mean([len(doc.blocks) for doc in docs]),
        "kinds": {k: round(v / sum(kinds.values()), 3) for k, v in sorted(kinds.items())},
        "longest_long_word": mean([max(map(len, re.findall("x{60,}", doc.text)), default=0)
                                   for doc in docs]),
        "japanese_share": round(sum(c in japanese for c in text) / max(1, len(text)), 3),
        "pre_lines": mean([len(lines) for lines in pre]),
        "pre_blank_share": mean([sum(not line for line in lines) / len(lines) for lines in pre]),
        "paragraph_lines": mean([len(lines) for lines in block_lines("paragraph")]),
        "table_rows": mean([len(b.rows) for doc in docs for b in doc.blocks
                            if b.kind == "table"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="rounds of 150 documents")
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    args = parser.parse_args()
    cpu, docs = draw(range(args.first, args.first + args.seeds))
    print(json.dumps({"cpu_s": round(cpu, 2)} | shapes(docs)))


if __name__ == "__main__":
    main()
