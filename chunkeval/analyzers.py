"""Lexical analyzers: how BM25 and LSA turn text into terms, chosen per corpus language.

- `char2`: character 2-grams, case kept (retrieval.Bigrams): for CJK text, which has no
  spaces between words.
- `word`: runs of word characters (Unicode \\w), lowercased: for space-delimited languages.
- `word+stem`: `word`, then each token through PyStemmer's English Snowball stemmer,
  so "packages" and "packaging" meet at "packag".

`auto` picks `char2` when CJK characters make up a fifth or more of the corpus's letters,
else `word+stem` (on debian-en faq-headings, fixed-400, BM25 Recall@5 was 17.7% with
`char2`, 25.7% with `word`, 27.7% with `word+stem`). The resolved name goes into results and baselines: a BM25 number means
nothing without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import scipy.sparse as sp

ANALYZERS = ("char2", "word", "word+stem")
AUTO = "auto"
CJK_SHARE = 0.2

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                  r"\uff66-\uff9f]")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"\w+")


def cjk_share(texts: Sequence[str]) -> float:
    """The share of CJK characters among the letters of `texts`."""
    cjk = letters = 0
    for t in texts:
        cjk += len(_CJK.findall(t))
        letters += len(_LETTER.findall(t))
    return cjk / letters if letters else 0.0


def is_cjk(texts: Sequence[str]) -> bool:
    return cjk_share(texts) >= CJK_SHARE


def resolve(name: str, texts: Sequence[str]) -> str:
    """`name`, or for `auto` the analyzer that fits the language of `texts`."""
    if name == AUTO:
        return "char2" if is_cjk(texts) else "word+stem"
    if name not in ANALYZERS:
        raise ValueError(f"unknown analyzer {name!r}; known: {AUTO}, {', '.join(ANALYZERS)}")
    if name == "word+stem":
        _stemmer()  # fail now, with the install hint, not in a worker
    return name


def _stemmer():
    try:
        import Stemmer
    except ImportError:
        raise ValueError("analyzer 'word+stem' needs PyStemmer (a chunkeval dependency): "
                         "pip install PyStemmer, or choose the analyzer 'word'") from None
    return Stemmer.Stemmer("english")


class _Tokenizer:
    def __init__(self, stem: bool):
        self.stemmer = _stemmer() if stem else None
        self.memo: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        tokens = _WORD.findall(text.lower())
        if self.stemmer is None:
            return tokens
        memo = self.memo
        fresh = [t for t in set(tokens) if t not in memo]
        if fresh:
            memo.update(zip(fresh, self.stemmer.stemWords(fresh)))
        return [memo[t] for t in tokens]


@dataclass
class Words:
    """A fitted word vocabulary: term -> id, ids in sorted term order (as for Bigrams)."""

    ids: dict[str, int]
    tokenize: _Tokenizer

    def __len__(self) -> int:
        return len(self.ids)

    def terms(self) -> list[str]:
        return sorted(self.ids, key=self.ids.__getitem__)

    def subset(self, keep: np.ndarray) -> "Words":
        terms = self.terms()
        return Words({terms[i]: n for n, i in enumerate(keep)}, self.tokenize)

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """[len(texts), len(vocab)] term counts; unknown terms are dropped."""
        rows, cols = [], []
        for i, text in enumerate(texts):
            found = [self.ids[t] for t in self.tokenize(text) if t in self.ids]
            cols.extend(found)
            rows.extend([i] * len(found))
        m = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)),
                          shape=(len(texts), len(self.ids)))
        m.sum_duplicates()
        return m


def fit_words(texts: Sequence[str], *, stem: bool = False
              ) -> tuple[Words, sp.csr_matrix, np.ndarray]:
    """As retrieval.fit_bigrams: the vocabulary, counts term-major ([vocab, texts], CSR) and
    each text's number of tokens."""
    tokenize = _Tokenizer(stem)
    tokens = [tokenize(t) for t in texts]
    vocab = sorted({t for ts in tokens for t in ts})
    ids = {t: i for i, t in enumerate(vocab)}
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    cols = np.fromiter((ids[t] for ts in tokens for t in ts), dtype=np.int64,
                       count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    tf = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (cols, rows)),
                       shape=(len(vocab), len(texts)))
    tf.sum_duplicates()
    tf.sort_indices()
    return Words(ids, tokenize), tf, lengths


def fit(analyzer: str, texts: Sequence[str]):
    """(vocabulary, term-major counts, tokens per text) under `analyzer`. The last fit is
    kept (its texts and counts stay in memory until the next fit), as BM25 and LSA fit the
    same chunks one after the other; callers must not change what they get."""
    return _fit(analyzer, tuple(texts))


@lru_cache(maxsize=1)
def _fit(analyzer: str, texts: tuple[str, ...]):
    if analyzer == "char2":
        from .retrieval import fit_bigrams
        return fit_bigrams(texts)
    if analyzer in ("word", "word+stem"):
        return fit_words(texts, stem=analyzer == "word+stem")
    raise ValueError(f"unknown analyzer {analyzer!r}; known: {', '.join(ANALYZERS)}")
