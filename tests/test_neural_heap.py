"""The `use` encoder keeps its transient arrays in the heap while it runs: the same vector
bits, glibc's limits put back afterwards."""

import numpy as np
import pytest

from chunkeval.retrieval import neural


class _Mallopt:
    def __init__(self):
        self.calls = []

    def mallopt(self, option, value):
        self.calls.append((option, value))
        return 1


class _Model:
    def __init__(self, libc, fail=False):
        self.libc, self.fail, self.seen = libc, fail, None

    def encode(self, texts):
        self.seen = list(self.libc.calls)
        if self.fail:
            raise RuntimeError("the encoder failed")
        return np.ones((len(texts), 512), dtype=np.float64)


@pytest.mark.parametrize("fail", [False, True])
def test_the_heap_limits_are_raised_while_the_encoder_runs_and_put_back_after(monkeypatch, fail):
    libc = _Mallopt()
    model = _Model(libc, fail)
    monkeypatch.setattr(neural, "_libc", libc)
    monkeypatch.setattr(neural, "_model", model)
    raised = [(neural._M_MMAP_THRESHOLD, neural.HEAP_ARRAYS),
              (neural._M_TRIM_THRESHOLD, 2 * neural.HEAP_ARRAYS)]
    back = [(neural._M_MMAP_THRESHOLD, neural._GLIBC_MMAP_MAX),
            (neural._M_TRIM_THRESHOLD, 2 * neural._GLIBC_MMAP_MAX)]
    if fail:
        with pytest.raises(RuntimeError, match="the encoder failed"):
            neural.use_embed(["a text"])
    else:
        vectors = neural.use_embed(["a text", "another"])
        assert vectors.dtype == np.float32 and vectors.shape == (2, 512)
    assert model.seen == raised
    assert libc.calls == raised + back


def test_without_glibc_the_encoder_runs_as_it_is(monkeypatch):
    monkeypatch.setattr(neural, "_libc", False)  # looked up already: not glibc
    model = _Model(_Mallopt())
    monkeypatch.setattr(neural, "_model", model)
    assert neural.use_embed(["a text"]).shape == (1, 512)
    assert model.seen == []


def _texts():
    # enough tokens that the encoder's gathered windows pass glibc's 32 MiB mmap limit
    words = ["パッケージ", "を", "インストール", "する", "apt", "install", "the kernel",
             "設定ファイル", "は", "/etc", "にあります", "backup", "毎日", "network", "再起動"]
    return [" ".join(words[(i * 7 + j * (i % 5 + 1)) % len(words)] for j in range(90))
            for i in range(72)]


def test_the_vectors_are_the_same_bits_with_the_arrays_in_the_heap_or_mapped():
    texts = _texts()
    in_heap = neural.use_embed(texts)
    mapped = np.asarray(neural._model.encode(texts), dtype=np.float32)  # glibc's limits
    assert in_heap.shape == (len(texts), 512)
    assert np.array_equal(in_heap, mapped)
