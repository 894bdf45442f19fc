"""How many questions each leak threshold flags: LLM-written questions that should pass (the
questions CSV of Chroma's chunking evaluation, `general_evaluation_data/questions_df.csv`,
not shipped here) against questions made by copying a stretch of their own excerpt, which
should not. Two measures: the share of a question's content words found anywhere in its
excerpts, and `queries.generate.leak_share`, the share found inside quotes of them.

    python bench/question_leaks.py questions_df.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import random

from chunkeval.queries.generate import LEAK_MIN_TERMS, LEAK_SHARE, leak_share
from chunkeval.queries.generate import _is_content as is_content
from chunkeval.queries.generate import _tokens as tokens

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
# What a question made by copying wraps around the copied stretch.
WRAPPERS = ("What does the text say about {}?", "Is it true that {}?", "{}?", "Why {}?")


def word_share(question: str, excerpts: list[str]) -> float:
    """Content words of the question found anywhere in the excerpts, in any order."""
    asked = {t for t in tokens(question) if is_content(t)}
    if len(asked) < LEAK_MIN_TERMS:
        return 0.0
    given = {t for e in excerpts for t in tokens(e)}
    return len(asked & given) / len(asked)


def copied(excerpts: list[str], rng: random.Random) -> str:
    words = excerpts[0].split()
    n = min(len(words), rng.randint(8, 16))
    start = rng.randint(0, len(words) - n)
    return rng.choice(WRAPPERS).format(" ".join(words[start:start + n]).rstrip(".,;:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="Chroma's questions_df.csv")
    args = parser.parse_args()
    with open(args.csv, encoding="utf-8", newline="") as f:
        rows = [(r["question"], [x["content"] for x in json.loads(r["references"])])
                for r in csv.DictReader(f)]
    rng = random.Random(0)
    copies = [(copied(ex, rng), ex) for _, ex in rows]
    print(f"{len(rows)} LLM-written questions, {len(copies)} copied ones; questions of fewer "
          f"than {LEAK_MIN_TERMS} content words are never flagged "
          f"({sum(word_share(q, ex) == 0 for q, ex in copies)} copies)")
    for name, measure in (("content words anywhere in the excerpts", word_share),
                          ("content words inside quotes (leak_share)", leak_share)):
        print(f"\n{name}\n| threshold | LLM-written flagged | copied flagged |\n|---|---|---|")
        real = [measure(q, ex) for q, ex in rows]
        fake = [measure(q, ex) for q, ex in copies]
        for t in THRESHOLDS:
            mark = " (chosen)" if measure is leak_share and t == LEAK_SHARE else ""
            print(f"| {t:.1f}{mark} | {sum(x >= t for x in real)} | {sum(x >= t for x in fake)} |")


if __name__ == "__main__":
    main()
