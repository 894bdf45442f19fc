"""The fast scoring path.

Shingles become integer ids, one vocabulary per corpus view: a chunk's shingles are the ids
of the windows of its whitespace-free text, and "gold shingle g is in the chunk" becomes "g's
id is among the chunk's". The view keeps its vocabulary and each document's ids window by
window (4 bytes a character; a chunk that is a slice of its document takes its ids from
there), not where each gold shingle occurs, so that what a view costs in memory is a small
multiple of its text. A shingle the view never holds (in rewritten text, a chunk shorter
than a shingle, a document outside the view) stays a string.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..model import Chunk, QuerySet
from ..outside import Length
from .scores import Scores
from .shingling import SHINGLE, _code_points, _whitespace, gold_shingles

# Shingles looked up at once when scoring a ranking, and shingles a view's vocabulary takes
# in at once: they bound the memory of those steps.
PAIR_BLOCK = 1 << 18
UNION_BATCH = 1 << 23


def _windows(bare: np.ndarray, n: int) -> np.ndarray:
    """The shingles of a whitespace-free text's codes, as rows (none when fewer than n)."""
    if len(bare) < n:
        return np.zeros((0, n), dtype=bare.dtype)
    return np.lib.stride_tricks.sliding_window_view(bare, n)


def _hash(windows: np.ndarray) -> np.ndarray:
    h = np.zeros(len(windows), dtype=np.uint64)
    for column in windows.T:  # polynomial, modulo 2**64
        h = h * np.uint64(1_000_003) + column
    return h


def _as_keys(windows: np.ndarray) -> np.ndarray:
    """Rows of codes as one comparable value each (for unique and searchsorted)."""
    windows = np.ascontiguousarray(windows)
    return windows.view(np.dtype((np.void, windows.shape[1] * windows.itemsize))).ravel()


def _distinct(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hash table is several times slower than a sort)."""
    ids = np.sort(ids)
    if len(ids) < 2:
        return ids
    keep = np.empty(len(ids), dtype=bool)
    keep[0] = True
    keep[1:] = ids[1:] != ids[:-1]  # not np.not_equal(out=): it has no loop for the keys
    return ids[keep]


def _union(parts: Iterable[np.ndarray], dtype) -> np.ndarray:
    """The sorted distinct values of all parts, merged a batch at a time: memory holds the
    result and one batch, not every value of a large corpus at once."""
    out, batch, held = np.zeros(0, dtype), [], 0
    for part in parts:
        batch.append(part)
        held += len(part)
        if held >= UNION_BATCH:
            out, batch, held = _distinct(np.concatenate([out, *batch])), [], 0
    return _distinct(np.concatenate([out, *batch]))


def _search(sorted_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """np.searchsorted, with the values searched in order: in a large array, searches in
    random order are mostly cache misses (several times slower)."""
    order = np.argsort(values)
    at = np.empty(len(values), dtype=np.int64)
    at[order] = np.searchsorted(sorted_values, values[order])
    return at


class _ViewIndex:
    """One corpus view's shingle vocabulary for one shingle size: the sorted distinct
    shingles of its documents, whitespace removed; a shingle's id is its place there."""

    def __init__(self, view, n: int):
        self.n = n
        documents = getattr(view, "documents", ())  # a bare QuerySet may come without one
        self.number = {d.id: i for i, d in enumerate(documents)}
        bare = ["".join(d.text.split()) for d in documents]
        # Characters become codes in the view's alphabet, of 16 bits when it has fewer than
        # 65,535 (any real corpus): a shingle is then 16 bytes, not 32. A character the view
        # lacks gets a code no shingle of the view has.
        seen = np.zeros(sys.maxunicode + 1, dtype=bool)
        for b in bare:
            seen[_code_points(b)] = True
        alphabet = np.flatnonzero(seen)
        self.code = np.full(len(seen), len(alphabet),
                            dtype=np.uint16 if len(alphabet) < 65535 else np.uint32)
        self.code[alphabet] = np.arange(len(alphabet))
        key = np.dtype((np.void, n * self.code.itemsize))
        # Ids by a 64-bit hash of each shingle (sorting and searching plain integers is
        # fast); kept only when no two different shingles share a hash, so ids stay exact.
        self.hash = _union((_hash(self.rows(b)) for b in bare), np.uint64)
        self.vocab = np.zeros(len(self.hash), dtype=key)  # each hash's shingle
        have = np.zeros(len(self.hash), dtype=bool)
        # Each document's ids, window by window (4 bytes a character, int32 below 2**31
        # shingles): every strategy's chunks of the view are, as a rule, slices of its
        # documents, and slicing these is cheaper than looking each chunk's shingles up.
        self.ids_of: list[np.ndarray | None] = [None] * len(bare)
        small = len(self.hash) < 1 << 31
        for number, b in enumerate(bare):
            rows = self.rows(b)
            ids, keys = _search(self.hash, _hash(rows)), _as_keys(rows)
            new = ~have[ids]
            self.vocab[ids[new]] = keys[new]
            have[ids] = True
            if not (self.vocab[ids] == keys).all():  # two shingles share a hash
                self.hash = None
                self.vocab = _union((_as_keys(self.rows(b)) for b in bare), key)
                self.ids_of = [None] * len(bare)  # looked up when asked
                break
            self.ids_of[number] = ids.astype(np.int32) if small else ids
        self._spaces: dict[int, np.ndarray] = {}

    def document_ids(self, number: int, text: str) -> tuple[np.ndarray, np.ndarray]:
        """View document `number`'s shingle ids, window by window of its whitespace-free
        text (`text` is its text), and the offsets of its whitespace characters."""
        if number not in self._spaces:
            space = np.isin(_code_points(text), _whitespace())
            if self.ids_of[number] is None:
                self.ids_of[number] = self.lookup(self.rows("".join(text.split())))
            self._spaces[number] = np.flatnonzero(space)
        return self.ids_of[number], self._spaces[number]

    def rows(self, bare: str) -> np.ndarray:
        """The shingles of a whitespace-free text, as rows of n codes."""
        return _windows(self.code[_code_points(bare)], self.n)

    def lookup(self, windows: np.ndarray) -> np.ndarray:
        """Vocabulary ids of shingles (rows of n codes), -1 for those the view lacks."""
        if not len(windows) or not len(self.vocab):
            return np.full(len(windows), -1, dtype=np.int64)
        keys = _as_keys(windows)
        if self.hash is None:
            at = np.minimum(np.searchsorted(self.vocab, keys), len(self.vocab) - 1)
            return np.where(self.vocab[at] == keys, at, -1)
        hashes = _hash(windows)
        at = np.minimum(_search(self.hash, hashes), len(self.hash) - 1)
        return np.where((self.hash[at] == hashes) & (self.vocab[at] == keys), at, -1)

    def lookup_strings(self, strings: Sequence[str]) -> np.ndarray:
        """lookup() of shingle strings, each of length n."""
        return self.lookup(self.code[_code_points("".join(strings))].reshape(-1, self.n))


def _cached(owner, key, build):
    """A value kept on `owner` (a view or a query set) for as long as it lives."""
    store = getattr(owner, "__dict__", None)
    if store is None:
        return build()
    cache = store.setdefault("_chunkeval_scoring", {})
    if key not in cache:
        cache[key] = build()
    return cache[key]


@dataclass
class _Gold:
    """One query's gold shingles."""

    strings: tuple[str, ...]
    ids: np.ndarray  # sorted vocabulary ids of the gold shingles the view holds
    id_at: np.ndarray  # ... and which gold shingle each one is (index into strings)
    unknown: frozenset[str]  # the gold shingles it does not hold (short ones among them)
    short: tuple[str, ...]  # those shorter than the shingle size


def _gold_of(index: _ViewIndex, q) -> _Gold:
    n = index.n
    strings = tuple(sorted(gold_shingles(q.golds, n)))
    full = [s for s in strings if len(s) == n]
    full_at = np.array([i for i, s in enumerate(strings) if len(s) == n], dtype=np.int64)
    ids = index.lookup_strings(full)
    known = ids >= 0
    short = tuple(s for s in strings if len(s) < n)
    unknown = frozenset(s for s, ok in zip(full, known) if not ok) | frozenset(short)
    order = np.argsort(ids[known], kind="stable")  # distinct strings have distinct ids
    return _Gold(strings, ids[known][order], full_at[known][order], unknown, short)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


class _Handed:
    """What the fast path needs of one strategy's handed chunks on one view."""

    def __init__(self, index: _ViewIndex, view, handed: Sequence[Chunk]):
        self.view = view
        self.number = dict(index.number)  # documents outside the view get numbers too
        self.doc = np.array([self.number.setdefault(c.doc_id, len(self.number))
                             for c in handed], dtype=np.int64)
        # a chunk's distinct shingles: (sorted ids, strings the view lacks); kept, as a chunk
        # recurs in the top k of many queries and retrievers
        self.shingles: dict[int, tuple[np.ndarray, frozenset[str]]] = {}

    def fill(self, index: _ViewIndex, handed: Sequence[Chunk], chunks: Iterable[int]) -> None:
        """Work out the shingles of the chunks not seen yet, many at once: chunk by chunk,
        numpy's calls cost more than their work. A chunk that is the slice of its view
        document's text at its span takes its ids from the document's (`document_ids`); the
        others are looked up."""
        todo = [i for i in dict.fromkeys(chunks) if i not in self.shingles]
        documents = getattr(self.view, "documents", ())
        sliced, looked_up = {}, []
        for i in todo:
            c = handed[i]
            number = index.number.get(c.doc_id)
            text = documents[number].text if number is not None else None
            if text is not None and 0 <= c.start and text[c.start:c.end] == c.text:
                ids, space = index.document_ids(number, text)
                # offsets in the whitespace-free text: less the whitespace before them
                lo, hi = (c.start - int(np.searchsorted(space, c.start)),
                          c.end - int(np.searchsorted(space, c.end)))
                if hi - lo >= index.n:  # a chunk shorter than a shingle is a string
                    sliced[i] = ids[lo:hi - index.n + 1]
                    continue
            looked_up.append(i)
        self._fill_sliced(index, sliced)
        self._fill_looked_up(index, handed, looked_up)

    def _fill_sliced(self, index: _ViewIndex, sliced: dict[int, np.ndarray]) -> None:
        """Each chunk's distinct ids, sorted, from the windows of its document it covers (the
        view holds every one of them)."""
        v = max(len(index.vocab), 1)
        todo = list(sliced)
        for lo, hi in _blocks([len(sliced[i]) for i in todo], PAIR_BLOCK):
            parts = [sliced[i] for i in todo[lo:hi]]
            owner = np.repeat(np.arange(hi - lo, dtype=np.int64), [len(p) for p in parts])
            key = _distinct(owner * v + np.concatenate(parts))
            split = np.searchsorted(key, np.arange(1, hi - lo) * v)
            for i, part in zip(todo[lo:hi], np.split((key % v).astype(np.int32), split)):
                self.shingles[i] = (part, frozenset())

    def _fill_looked_up(self, index: _ViewIndex, handed: Sequence[Chunk],
                        todo: list[int]) -> None:
        """Each chunk's distinct ids, sorted, by looking its shingles up, and the shingle
        strings the view lacks."""
        n, v = index.n, max(len(index.vocab), 1)
        bares = ["".join(handed[i].text.split()) for i in todo]
        sizes = [max(len(b) - n + 1, 0) for b in bares]
        for lo, hi in _blocks(sizes, PAIR_BLOCK):
            bare = bares[lo:hi]
            starts = np.cumsum([0] + [len(b) for b in bare[:-1]])
            at, owner = _ranges(starts, np.array(sizes[lo:hi], dtype=np.int64))
            ids = index.lookup(index.rows("".join(bare))[at])
            known = ids >= 0
            key = _distinct(owner[known] * v + ids[known])
            split = np.searchsorted(key, np.arange(1, hi - lo) * v)
            unknown: dict[int, set[str]] = {}
            for p, o in zip(at[~known].tolist(), owner[~known].tolist()):
                unknown.setdefault(o, set()).add(bare[o][p - starts[o]:p - starts[o] + n])
            for o, part in enumerate(np.split((key % v).astype(np.int32), split)):
                if 0 < len(bare[o]) < n:  # one short shingle, which no id stands for
                    unknown[o] = {bare[o]}
                self.shingles[todo[lo + o]] = (part, frozenset(unknown.get(o, ())))


class _GoldTable:
    """A query set's golds, flat, so that one ranking's queries are scored together. Gold
    shingle gi of query q has the global number offset[q] + gi."""

    def __init__(self, index: _ViewIndex, golds: Sequence[_Gold]):
        self.size = np.array([len(g.strings) for g in golds], dtype=np.int64)
        self.offset = np.concatenate([[0], np.cumsum(self.size)]).astype(np.int64)
        self.query = np.repeat(np.arange(len(golds)), self.size)  # global number -> query
        # Every query's known gold ids (ids[start[q]:start[q] + count[q]], sorted) and their
        # global numbers. Sized by the golds: where they occur in their documents is not kept,
        # as a long page holding many queries made that grow with queries x page length.
        self.vocab = max(len(index.vocab), 1)
        self.count = np.array([len(g.ids) for g in golds], dtype=np.int64)
        self.start = np.cumsum(self.count) - self.count
        self.ids = _concat([g.ids for g in golds])
        self.number = np.repeat(self.offset[:-1], self.count) + _concat([g.id_at for g in golds])
        self._position: dict[int, dict[str, int]] = {}

    def position(self, qi: int, gold: _Gold) -> dict[str, int]:
        """Gold shingle string -> global number, for query qi (strings the ids miss)."""
        if qi not in self._position:
            base = int(self.offset[qi])
            self._position[qi] = {s: base + gi for gi, s in enumerate(gold.strings)}
        return self._position[qi]


def prepare(query_set: QuerySet, shingle: int = SHINGLE
            ) -> tuple[_ViewIndex, list[_Gold], _GoldTable]:
    """The fast path's per-view and per-query-set tables, built on first use and kept on
    those objects (so shared by every strategy and retriever scored on them; called before
    forking workers, so that they inherit the tables instead of each building its own)."""
    view = query_set.view
    index = _cached(view, ("view", shingle), lambda: _ViewIndex(view, shingle))
    golds = _cached(query_set, ("gold", shingle),
                    lambda: [_gold_of(index, q) for q in query_set.queries])
    table = _cached(query_set, ("table", shingle), lambda: _GoldTable(index, golds))
    return index, golds, table


def _compact(ranking: np.ndarray) -> np.ndarray:
    """Each row's chunk ids first, in their order, then the -1 padding."""
    valid = ranking >= 0
    if (valid[:, 1:] <= valid[:, :-1]).all():
        return ranking
    return np.take_along_axis(ranking, np.argsort(~valid, axis=1, kind="stable"), axis=1)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All of range(starts[i], starts[i] + counts[i]), concatenated, and each one's i."""
    owner = np.repeat(np.arange(len(counts)), counts)
    return np.arange(len(owner)) + np.repeat(starts - np.cumsum(counts) + counts, counts), owner


def _blocks(sizes: list[int], limit: int):
    """(lo, hi) ranges of consecutive items whose sizes add up to at most `limit` (or of
    one item larger than that)."""
    lo, held = 0, 0
    for i, size in enumerate(sizes):
        if i > lo and held + size > limit:
            yield lo, i
            lo, held = i, 0
        held += size
    if lo < len(sizes):
        yield lo, len(sizes)


def _score_fast(out: Scores, query_set: QuerySet, handed: Sequence[Chunk],
                ranking: np.ndarray, *, k: int, budget: int, budgets: Sequence[int],
                shingle: int, length: Length, chunk_index: dict | None) -> None:
    """Every query of the ranking at once, as arrays of (query, rank) pairs; only shingles
    that ids do not stand for are looked at one by one."""
    queries = query_set.queries
    if not handed:  # no chunks, so nothing retrieved: every score stays 0
        out.retrieved.extend([] for _ in queries)
        return
    view = query_set.view
    index, golds, table = prepare(query_set, shingle)
    if chunk_index is None:
        chunk_index = {}
    prep = chunk_index.get(shingle)
    if prep is None or prep.view is not view:
        prep = chunk_index[shingle] = _Handed(index, view, handed)
    lengths = [length(c.text) for c in handed]
    n_queries, width = ranking.shape
    ranking = _compact(ranking)
    valid = ranking >= 0
    n_valid = valid.sum(axis=1)
    chunk = np.where(valid, ranking, 0)  # safe to index with; `valid` says which are real
    rows = np.arange(n_queries)
    cols = np.arange(width)

    # the first chunk always counts, then chunks while the running total fits
    total = np.cumsum(np.where(valid, np.asarray(lengths, dtype=np.float64)[chunk], 0.0), axis=1)
    taken = {}
    for b in sorted({budget, *budgets}):
        within = np.count_nonzero(valid & (total <= b), axis=1)
        taken[b] = np.where(n_valid > 0, np.maximum(within, 1), 0)
    n_top = np.minimum(k, n_valid)
    depth = np.maximum.reduce([n_top, *taken.values()])
    gold_doc = np.array([prep.number.get(q.doc_id, -1) for q in queries], dtype=np.int64)
    in_gold = (cols < depth[:, None]) & (prep.doc[chunk] == gold_doc[:, None])

    # the rank (from 1) at which each gold shingle is first found; width + 1: never
    first = np.full(int(table.offset[-1]), width + 1, dtype=np.int64)
    pq, pj = np.nonzero(in_gold)
    pc = chunk[pq, pj].tolist()
    prep.fill(index, handed, pc + chunk[cols < n_top[:, None]].tolist())
    parts = [prep.shingles[c] for c in pc]
    # Each pair's gold ids looked up among its chunk's, all pairs at once under keys pair x
    # vocabulary + id (sorted as they come); a block of pairs at a time, as a few large
    # chunks in the top k of many queries would make an array of queries x chunk length.
    for lo, hi in _blocks([len(ids) for ids, _ in parts], PAIR_BLOCK):
        held = np.concatenate([ids for ids, _ in parts[lo:hi]])
        if not len(held):
            continue
        held = held + np.repeat(np.arange(lo, hi), [len(ids) for ids, _ in parts[lo:hi]]
                                ) * table.vocab
        at, pair = _ranges(table.start[pq[lo:hi]], table.count[pq[lo:hi]])
        sought = table.ids[at] + (pair + lo) * table.vocab
        hit = held[np.minimum(np.searchsorted(held, sought), len(held) - 1)] == sought
        np.minimum.at(first, table.number[at[hit]], pj[lo + pair[hit]] + 1)
    # What ids cannot say: gold shingles the view lacks, among a chunk's own strings, and a
    # short gold, found as a substring of a chunk's whitespace-free text.
    for p in [p for p, qi in enumerate(pq.tolist())
              if golds[qi].short or (golds[qi].unknown and parts[p][1])]:
        qi, j, gold = int(pq[p]), int(pj[p]), golds[pq[p]]
        strings = gold.unknown & parts[p][1]
        if gold.short:
            bare = "".join(handed[pc[p]].text.split())
            strings |= {s for s in gold.short if s in bare}
        for s in strings:
            g = table.position(qi, gold)[s]
            first[g] = min(first[g], j + 1)
    found = np.cumsum(np.bincount(table.query * (width + 2) + first,
                                  minlength=n_queries * (width + 2)
                                  ).reshape(n_queries, width + 2), axis=1)
    size = table.size
    prefix = np.where(size[:, None] > 0, found / np.maximum(size, 1)[:, None], 0.0)

    ndcg, rr, best = out.ndcg, out.rr, out.best
    most = np.zeros(n_queries)
    for j in range(1, min(k, width) + 1):  # rank by rank, as the definition adds them up
        gain = prefix[:, j] - prefix[:, j - 1]
        on = (j <= n_top) & (gain > 0)
        ndcg[on] += gain[on] / np.log2(j + 1)
        rr[on & (rr == 0)] = 1.0 / j
        more = on & (gain > most)
        best[more], most[more] = j - 1, gain[more]
    out.coverage[:] = prefix[rows, n_top]
    out.budget_coverage[:] = prefix[rows, taken[budget]]
    for b in budgets:
        out.curve[b][:] = prefix[rows, taken[b]]
    in_top = cols < n_top[:, None]
    out.doc_hit[:] = (in_gold & in_top).any(axis=1)

    # Precision and IoU need the distinct shingles of the top k, from any document: ids,
    # and strings the view lacks. Their union without sorting: each id's slot takes the
    # position of one of its occurrences, so the positions that kept their slot count the
    # distinct ids. Slots need no clearing between queries: an id among this query's was just
    # overwritten, and one not among them matches no position, wherever its old slot points.
    # (Query by query: the top k of large chunks hold tens of thousands of ids each.)
    slot = np.zeros(len(index.vocab), dtype=np.int32)
    seen = np.zeros(n_queries, dtype=np.int64)
    common = np.zeros(n_queries, dtype=np.int64)
    ranked = ranking.tolist()
    for qi, top in enumerate(ranked):
        parts, unknown = [], set()
        for i in top[:n_top[qi]]:
            ids, extra = prep.shingles[i]
            parts.append(ids)
            unknown |= extra
        ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        at = np.arange(len(ids), dtype=np.int32)
        slot[ids] = at
        seen[qi] = np.count_nonzero(slot[ids] == at) + len(unknown)
        if len(ids):
            gold_ids = golds[qi].ids
            where = np.minimum(slot[gold_ids], len(ids) - 1)  # an old slot may lie beyond
            common[qi] = np.count_nonzero(ids[where] == gold_ids)
        if unknown:
            common[qi] += len(golds[qi].unknown.intersection(unknown))
    found_top = found[rows, n_top]
    some = seen > 0
    out.precision[some] = found_top[some] / seen[some]
    out.iou[some] = found_top[some] / (seen + size - common)[some]

    used = np.maximum(n_top, taken[budget])  # the curve's larger budgets are not listed
    listed = [(c.doc_id, c.start, c.end, n) for c, n in zip(handed, lengths)]
    out.retrieved.extend([listed[i] for i in row[:u]]
                         for row, u in zip(ranked, used.tolist()))
