"""Lexical analyzers: how BM25 and LSA turn text into terms, chosen per corpus language.

- `char2`: character 2-grams, case kept (`Bigrams`): for CJK text, which has no spaces
  between words.
- `word`: runs of word characters (Unicode \\w), lowercased: for space-delimited languages.
- `word+stem`: `word`, then each token through PyStemmer's English Snowball stemmer,
  so "packages" and "packaging" meet at "packag".

`auto` picks `char2` when CJK characters make up a fifth or more of the corpus's letters,
else `word+stem` (the best of the three on debian-en: bench/results/design-figures.md). The resolved
name goes into results and baselines: a BM25 number means nothing without it.

The `char2` analyzer's tokens are the character 2-grams of scikit-learn's
`CountVectorizer(analyzer="char", ngram_range=(2, 2), lowercase=False)`: runs of two or more
whitespace characters collapse to one space, then every pair of adjacent characters is a
token. CountVectorizer feeds every token through a Python dict, so `Bigrams` computes the
same tokens, the same vocabulary in the same (code point) order and the same counts with a
few numpy sorts; tests check it against CountVectorizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ConfigError, UnknownName
from ..results import ANALYZERS, AUTO_ANALYZER

if TYPE_CHECKING:  # imported where a matrix is built: a warm run reads its results, builds none
    import scipy.sparse as sp

AUTO = AUTO_ANALYZER
CJK_SHARE = 0.2

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                  r"\uff66-\uff9f]")
_LETTER = re.compile(r"[^\W\d_]")
_ASCII_RUN = re.compile(r"[\x00-\x7f]+")
_ASCII_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_WORD = re.compile(r"\w+")
_WHITE_SPACES = re.compile(r"\s\s+")  # CountVectorizer's own whitespace rule


def cjk_share(texts: Sequence[str]) -> float:
    """The share of CJK characters among the letters of `texts`."""
    cjk = letters = 0
    for t in texts:
        # ASCII has no CJK, and its letters are a-z and A-Z: counted on bytes, the rest of
        # the text (all of a Japanese one) by the Unicode classes
        ascii = t.encode("ascii", "ignore")
        letters += len(ascii) - len(ascii.translate(None, _ASCII_LETTERS))
        rest = _ASCII_RUN.sub("", t) if len(ascii) else t
        cjk += len(_CJK.findall(rest))
        letters += len(_LETTER.findall(rest))
    return cjk / letters if letters else 0.0


def is_cjk(texts: Sequence[str]) -> bool:
    return cjk_share(texts) >= CJK_SHARE


def resolve(name: str, texts: Sequence[str]) -> str:
    """`name`, or for `auto` the analyzer that fits the language of `texts`."""
    if name == AUTO:
        return "char2" if is_cjk(texts) else "word+stem"
    if name not in ANALYZERS:
        raise UnknownName("analyzer", name, (AUTO, *ANALYZERS))
    if name == "word+stem":
        _stemmer()  # fail now, with the install hint, not in a worker
    return name


def _stemmer():
    try:
        import Stemmer
    except ImportError:
        raise ConfigError("analyzer 'word+stem' needs PyStemmer (a chunkeval dependency): "
                         "pip install PyStemmer, or choose the analyzer 'word'") from None
    return Stemmer.Stemmer("english")


# --- char2: character 2-grams ----------------------------------------------------------

def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All texts' code points end to end (whitespace runs collapsed), and each text's length."""
    norm = [_WHITE_SPACES.sub(" ", t) for t in texts]
    lengths = np.fromiter(map(len, norm), dtype=np.int64, count=len(norm))
    raw = "".join(norm).encode("utf-32-le", errors="surrogatepass")
    return np.frombuffer(raw, dtype=np.uint32), lengths


def _inside(lengths: np.ndarray) -> np.ndarray:
    """For joined texts: a mask over adjacent character pairs, False where a pair would
    straddle the end of one text and the start of the next."""
    total = int(lengths.sum())
    inside = np.ones(max(total - 1, 0), dtype=bool)
    last = np.cumsum(lengths)[:-1] - 1  # last character of every text but the final one
    inside[last[(last >= 0) & (last < total - 1)]] = False
    return inside


def _owners(lengths: np.ndarray) -> np.ndarray:
    """The text number of every 2-gram, in order."""
    return np.repeat(np.arange(len(lengths), dtype=np.int64), np.maximum(lengths - 1, 0))


def _pair_keys(ids: np.ndarray, bits: int, inside: np.ndarray) -> np.ndarray:
    """(first char id << bits) | second char id for every 2-gram inside a text."""
    keys = ids[:-1].astype(np.int64)
    keys <<= bits
    keys |= ids[1:]
    return keys[inside]


@dataclass(frozen=True)
class Bigrams:
    """A fitted 2-gram vocabulary: the characters seen and the sorted 2-gram keys.

    A key is (first char id << bits) | second char id, where char ids number the characters
    seen in code point order; so key order is the order of the 2-gram strings.
    """

    alphabet: np.ndarray  # sorted code points (uint32)
    vocab: np.ndarray  # sorted keys (int64)
    bits: int

    def __len__(self) -> int:
        return len(self.vocab)

    def subset(self, keep: np.ndarray) -> "Bigrams":
        return Bigrams(self.alphabet, self.vocab[keep], self.bits)

    def terms(self) -> list[str]:
        first, second = self.vocab >> self.bits, self.vocab & ((1 << self.bits) - 1)
        return [chr(self.alphabet[a]) + chr(self.alphabet[b]) for a, b in zip(first, second)]

    def keys(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each 2-gram of the texts that is in the vocabulary: (term id, text number)."""
        codes, lengths = _code_points(texts)
        if not len(self.vocab) or len(codes) < 2:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        inside = _inside(lengths)
        ids = np.searchsorted(self.alphabet, codes)
        ids[ids == len(self.alphabet)] = 0
        known = self.alphabet[ids] == codes
        ok = (known[:-1] & known[1:])[inside]
        keys, owner = _pair_keys(ids, self.bits, inside)[ok], _owners(lengths)[ok]
        term = np.searchsorted(self.vocab, keys)
        term[term == len(self.vocab)] = 0
        hit = self.vocab[term] == keys
        return term[hit], owner[hit]

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """[len(texts), len(vocab)] 2-gram counts; a 2-gram seen twice counts twice."""
        term, owner = self.keys(texts)
        import scipy.sparse as sp
        m = sp.csr_matrix((np.ones(len(term), dtype=np.float32), (owner, term)),
                          shape=(len(texts), len(self.vocab)))
        m.sum_duplicates()
        return m


def fit_bigrams(texts: Sequence[str]) -> tuple[Bigrams, sp.csr_matrix, np.ndarray]:
    """The vocabulary of `texts`, their counts term-major ([vocab, texts], CSR) and each
    text's number of 2-grams. One sort of (2-gram, text) keys yields all three."""
    codes, lengths = _code_points(texts)
    n_tokens = np.maximum(lengths - 1, 0)
    seen = np.zeros(0x110000, dtype=bool)  # a table beats np.unique on millions of chars
    seen[codes] = True
    alphabet = np.flatnonzero(seen).astype(np.uint32)
    bits = max(1, (len(alphabet) - 1).bit_length())
    text_bits = max(1, (len(texts) - 1).bit_length())
    if 2 * bits + text_bits > 63:
        raise ValueError(f"too many distinct characters ({len(alphabet)}) and texts "
                         f"({len(texts)}) for one 64-bit key")
    table = np.zeros(int(alphabet[-1]) + 1 if len(alphabet) else 1, dtype=np.int32)
    table[alphabet] = np.arange(len(alphabet))
    ids, inside = table[codes], _inside(lengths)
    keys = _pair_keys(ids, bits, inside)
    keys <<= text_bits
    keys |= _owners(lengths)
    if bits <= 16:
        # Sorted by the second character, then stably by the first: two radix passes over
        # 16-bit ids, twice as fast as sorting the 64-bit keys. The text numbers need no pass:
        # they rise along the keys, and stable sorts keep that order among equal 2-grams.
        order = np.argsort(ids[1:][inside].astype(np.uint16), kind="stable")
        order = order[np.argsort(ids[:-1][inside][order].astype(np.uint16), kind="stable")]
        keys = keys[order]
    else:
        keys.sort()
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    tf = np.diff(np.append(starts, len(keys))).astype(np.float32)
    pairs = keys[starts]
    doc = pairs & ((1 << text_bits) - 1)
    bigram = pairs >> text_bits
    new_term = np.ones(len(bigram), dtype=bool)
    new_term[1:] = bigram[1:] != bigram[:-1]
    term_starts = np.flatnonzero(new_term)
    vocab = bigram[term_starts]
    indptr = np.append(term_starts, len(bigram))
    import scipy.sparse as sp
    matrix = sp.csr_matrix((tf, doc.astype(np.int32), indptr), shape=(len(vocab), len(texts)))
    return Bigrams(alphabet, vocab, bits), matrix, n_tokens


# --- word, word+stem ---------------------------------------------------------------------

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
        import scipy.sparse as sp
        m = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)),
                          shape=(len(texts), len(self.ids)))
        m.sum_duplicates()
        return m


def fit_words(texts: Sequence[str], *, stem: bool = False
              ) -> tuple[Words, sp.csr_matrix, np.ndarray]:
    """As fit_bigrams: the vocabulary, counts term-major ([vocab, texts], CSR) and
    each text's number of tokens."""
    tokenize = _Tokenizer(stem)
    tokens = [tokenize(t) for t in texts]
    vocab = sorted({t for ts in tokens for t in ts})
    ids = {t: i for i, t in enumerate(vocab)}
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    cols = np.fromiter((ids[t] for ts in tokens for t in ts), dtype=np.int64,
                       count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    import scipy.sparse as sp
    tf = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (cols, rows)),
                       shape=(len(vocab), len(texts)))
    tf.sum_duplicates()
    tf.sort_indices()
    return Words(ids, tokenize), tf, lengths


def fit(analyzer: str, texts: Sequence[str]):
    """(vocabulary, term-major counts, tokens per text) under `analyzer` (`auto`: the one
    that fits the language of `texts`; a run hands in the one resolved on its corpus). The
    last fit is kept (its texts and counts stay in memory until the next fit), as BM25 and
    LSA fit the same chunks one after the other; callers must not change what they get."""
    texts = tuple(texts)
    return _fit(resolve(analyzer, texts) if analyzer == AUTO else analyzer, texts)


@lru_cache(maxsize=1)
def _fit(analyzer: str, texts: tuple[str, ...]):
    if analyzer == "char2":
        return fit_bigrams(texts)
    if analyzer in ("word", "word+stem"):
        return fit_words(texts, stem=analyzer == "word+stem")
    raise UnknownName("analyzer", analyzer, ANALYZERS)
