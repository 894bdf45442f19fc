"""Scores are rounded to a fixed number of significant bits before they are ranked, and LSA
is fitted in float64, so a ranking does not depend on the CPU's floating-point kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkeval.retrieval.hybrid import HybridIndex
from chunkeval.retrieval.ranking import SCORE_BITS, rounded, top_k

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_differences_below_the_precision_are_ties_and_the_earlier_chunk_wins(dtype):
    step = 2.0 ** -SCORE_BITS[np.dtype(dtype)]
    base = np.array([0.3, 0.7, 12.5, 1e-5], dtype=dtype)
    # the same scores with their last bits moved, as another CPU's kernels may leave them
    nudged = (base * (1 + np.array([1, -1, 1, -1]) * step / 64)).astype(dtype)
    assert (nudged != base).all()
    assert (rounded(nudged) == rounded(base)).all()
    for scores in (base, nudged):
        tied = np.array([[scores[0], scores[0] * (1 + step / 64), 0.0]], dtype=dtype)
        assert top_k(tied.astype(dtype), 3).tolist() == [[0, 1, 2]]
        tied = np.array([[scores[0] * (1 + step / 64), scores[0], 0.0]], dtype=dtype)
        assert top_k(tied.astype(dtype), 3).tolist() == [[0, 1, 2]]
    # a difference well above the precision still orders
    apart = np.array([[0.3, 0.3 * (1 + 4 * step)]], dtype=dtype)
    assert top_k(apart, 2).tolist() == [[1, 0]]


def test_rounding_is_monotone_and_leaves_the_input_alone():
    rng = np.random.default_rng(3)
    scores = np.sort(np.concatenate([rng.normal(size=5000), rng.uniform(0, 1e-3, 5000),
                                     [0.0, -0.0, 2.0 ** -31, 1.0, 0.5, np.inf]]))
    kept = scores.copy()
    out = rounded(scores)
    assert (np.diff(out) >= 0).all()
    assert (scores == kept).all()
    assert out[-1] == np.inf
    finite = slice(0, -1)
    assert (np.abs(out[finite] - scores[finite])
            <= np.abs(scores[finite]) * 2.0 ** -SCORE_BITS[out.dtype]).all()


def test_hybrid_sums_equal_in_any_order_tie():
    # Each of chunks 0, 1 and 2 is ranked 1st, 2nd and 7th by the three parts, in another
    # order: equal sums, but (s7 + s1) + s2 is one bit below (s1 + s2) + s7.
    class Fixed:
        def __init__(self, ranking):
            self.ranking = np.array(ranking)

        def __len__(self):
            return 7

        def search(self, queries, k):
            out = np.full((1, k), -1)
            out[0, :7] = self.ranking
            return out

    share = 1.0 / (60 + np.arange(1, 8))
    assert (share[6] + share[0]) + share[1] < (share[0] + share[1]) + share[6]
    parts = [Fixed([1, 2, 3, 4, 5, 6, 0]), Fixed([0, 1, 3, 4, 5, 6, 2]),
             Fixed([2, 0, 3, 4, 5, 6, 1])]
    ranked = HybridIndex(*parts).search(["q"], 7)[0].tolist()
    assert [c for c in ranked if c < 3] == [0, 1, 2]


LSA_RANKING = """
import hashlib, numpy as np
from chunkeval.retrieval.lexical import LSAIndex
rng = np.random.default_rng(1)
words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(2, 8)))
         for _ in range(400)]
texts = [" ".join(rng.choice(words, size=60)) for _ in range(600)]
print(hashlib.sha256(LSAIndex(texts, dims=64).search(texts[:200], 100).tobytes()).hexdigest())
"""


def test_lsa_ranks_alike_with_another_cpus_blas_kernels():
    # OpenBLAS picks its kernels by CPU; OPENBLAS_CORETYPE makes this one run another CPU's
    # (a float32 fit gave three different rankings under these three)
    def ranking(core: str) -> str:
        env = {**os.environ, "OPENBLAS_CORETYPE": core, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", LSA_RANKING], env=env, text=True,
                              capture_output=True, check=True)
        return done.stdout.strip()

    assert len({ranking(core) for core in ("Haswell", "Sandybridge", "Prescott")}) == 1


FIRST_FIT = """
from threadpoolctl import threadpool_info
from chunkeval.retrieval import lexical
fit, threads = lexical.lsa_components, []
def watched(*args):
    found = fit(*args)  # scipy's linear algebra, and its BLAS, are loaded by now
    threads.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    return found
lexical.lsa_components = watched
lexical.LSAIndex([f"chunk {i} on topic {i % 7} and {i % 11}" for i in range(60)], dims=8)
print(*threads)
"""


def test_the_first_lsa_fit_of_a_process_runs_every_blas_on_one_thread():
    # A thread limit reaches only the libraries loaded when it is set; scipy's linear algebra
    # brings a BLAS of its own (not numpy's), which the first fit of a fresh process loaded
    # inside the limit: that fit ran on every core, the later ones on one, so a forked
    # worker's first index had other last bits than a serial run's (or Ray's) same index
    done = subprocess.run([sys.executable, "-c", FIRST_FIT], text=True, capture_output=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    threads = [int(n) for n in done.stdout.split()]
    assert threads and set(threads) == {1}, threads
