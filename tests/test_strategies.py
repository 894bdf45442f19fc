"""The strategies do what SPEC section 5 says, and the seed's LangChain observations hold."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval import strategies
from chunkeval.invariants import check
from chunkeval.model import Document, Part
from chunkeval.strategies.fixed import fixed
from chunkeval.strategies.langchain_html import render_html
from chunkeval.strategies.recursive import (CJK_SEPARATORS, SPACE_SEPARATORS, _char_windows,
                                            _merge, recursive, separators_for, split_spans)
from chunkeval.strategies.structure import structure

from helpers import langchain_splitter

T = "FAQ"


def h(h2="", h3=""):
    return (T, h2, h3)


# Sentences of mixed length, as in a Japanese FAQ answer.
SENTENCES = ["パッケージは apt で入れます。", "設定ファイルは /etc にあります。",
             "はい。", "詳しくはマニュアルを読んでください。",
             "古い版では dpkg を直接使うこともありましたが、いまは勧めません。"]


def paragraph(i: int, n: int) -> str:
    return "".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(n))


def faq_document() -> Document:
    parts = [Part("heading1", T, h())]
    for s in range(6):
        title = f"質問 {s} について"
        parts.append(Part("heading2", title, h(title)))
        for p in range(8):
            parts.append(Part("paragraph", paragraph(s + p, 1 + (s * 3 + p) % 9), h(title)))
    return Document.from_parts("faq.html", T, parts)


def realized_overlaps(chunks) -> list[int]:
    return [max(0, a.end - b.start) for a, b in zip(chunks, chunks[1:])]


# --- the seed's LangChain observations --------------------------------------------------

def test_recursive_400_ov40_realises_no_overlap_at_most_boundaries():
    chunks = strategies.get("recursive-400-ov40").split(faq_document())
    overlaps = realized_overlaps(chunks)
    assert len(overlaps) >= 10
    assert sum(o == 0 for o in overlaps) > len(overlaps) / 2
    assert 0 < max(overlaps) <= 40  # it does overlap somewhere, never beyond the setting


@pytest.mark.parametrize("make", [fixed, recursive])
def test_overlap_larger_than_size_is_a_clear_error(make):
    with pytest.raises(ValueError, match=r"Got a larger chunk overlap \(200\) than chunk size "
                                         r"\(100\), should be smaller\."):
        make(100, 200)


def test_fixed_400_ov200_gives_nearly_twice_the_chunks_of_fixed_400():
    doc = faq_document()
    plain = len(strategies.get("fixed-400").split(doc))
    halved = len(strategies.get("fixed-400-ov200").split(doc))
    assert plain >= 10
    assert 1.8 * plain <= halved <= 2 * plain


def test_offsets_are_right_where_str_find_is_wrong():
    # The same answer twice: a plain search finds the first copy for both.
    answer = paragraph(0, 40)  # long enough to be split in every size
    doc = Document.from_parts("twice.html", T, [
        Part("heading2", "一つ目", h("一つ目")), Part("paragraph", answer, h("一つ目")),
        Part("heading2", "二つ目", h("二つ目")), Part("paragraph", answer, h("二つ目"))])
    for name in ("recursive-200", "recursive-400-ov40", "recursive-800"):
        chunks = strategies.get(name).split(doc)
        assert all(doc.text[c.start:c.end] == c.text for c in chunks)
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)
        second = doc.text.index("二つ目")
        assert any(c.start > second and doc.text.find(c.text) < second for c in chunks), name


def test_offsets_are_right_where_langchain_start_index_is_wrong():
    # Short repeated paragraphs: LangChain's add_start_index assumes a full 40-char
    # overlap and lands one paragraph early each time, leaving the text's end uncovered.
    doc = Document.from_parts("repeat.html", T, [Part("paragraph", "はい。設定")] * 120)
    text = doc.text
    theirs = langchain_splitter(400, 40, tuple(CJK_SEPARATORS)).create_documents([text])
    their_end = theirs[-1].metadata["start_index"] + len(theirs[-1].page_content)
    assert their_end < len(text)

    chunks = strategies.get("recursive-400-ov40").split(doc)
    assert [c.text for c in chunks] == [d.page_content for d in theirs]
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert chunks[-1].end == len(text)
    assert all(0 <= o <= 40 for o in realized_overlaps(chunks))


def test_recursive_texts_are_langchains_own():
    english = " ".join(f"Sentence {i} says one thing, then another; and so on." for i in range(60))
    for text in (faq_document().text, english):
        seps = tuple(separators_for(text))
        for size, overlap in ((200, 0), (400, 40), (800, 0)):
            spans = split_spans(text, size, overlap)
            assert [text[s:e] for s, e in spans] == \
                langchain_splitter(size, overlap, seps).split_text(text)


# Texts made of the separators of both scripts, words and runs of whitespace, so that every
# separator level, empty and whitespace-only pieces, and repeated text come up.
PIECES = st.sampled_from(["\n\n", "\n", "。", "、", ". ", "? ", "! ", "; ", ", ", " ", "  ",
                          "\t", "word", "ab", "x", "設定", "です", "long-unbroken-token"])


@given(text=st.lists(PIECES, max_size=120).map("".join), size=st.integers(1, 80),
       share=st.floats(0, 1), cjk=st.booleans())
def test_recursive_spans_are_langchains_chunks(text, size, share, cjk):
    overlap = int(size * share)
    seps = CJK_SEPARATORS if cjk else SPACE_SEPARATORS
    spans = split_spans(text, size, overlap, seps)
    assert [text[s:e] for s, e in spans] == \
        langchain_splitter(size, overlap, tuple(seps)).split_text(text)


@given(text=st.text(alphabet="ab \n\t設", max_size=300), size=st.integers(2, 60),
       share=st.floats(0, 1))
def test_character_windows_are_the_merge_of_one_character_pieces(text, size, share):
    # the merge's own path, on the pieces the "" separator makes: one per character
    overlap = int(size * share)
    pieces = [(i, i + 1) for i in range(len(text))]
    assert _char_windows(text, (0, len(text)), size, overlap) == \
        (_merge(text, pieces, [1] * len(pieces), size, overlap) if pieces else [])


def test_recursive_separators_follow_the_script():
    english = ("Install the package first. Then configure it, and restart the service. " * 12)
    assert separators_for(english) == SPACE_SEPARATORS
    assert separators_for("パッケージを入れる。設定する、そして再起動する。") == CJK_SEPARATORS
    spans = split_spans(english, 200)
    # English breaks at sentence ends, never inside a word (the CJK list would cut at 200 chars)
    assert all(english[e - 2:e] == ". " or english[e - 1] == "." or e == len(english.rstrip())
               for _, e in spans)
    assert all(len(english[s:e]) <= 200 for s, e in spans)


# --- structure, headings, prefix --------------------------------------------------------

ROWS = ("名前 | 値",) + tuple(f"項目{i} | {'説明' * 20}{i}" for i in range(30))
PRE = "\n".join(f"$ apt-get install package-{i} --option value" for i in range(30))


def structured_document() -> Document:
    return Document.from_parts("structured.html", T, [
        Part("heading1", T, h()),
        Part("paragraph", "はじめに。", h()),
        Part("heading2", "表", h("表")),
        Part("table", "\n".join(ROWS), h("表"), ROWS, 1),
        Part("heading3", "コマンド", h("表", "コマンド")),
        Part("pre", PRE, h("表", "コマンド")),
        Part("paragraph", "short", h("表", "コマンド")),
    ])


def test_structure_splits_a_large_table_by_rows_repeating_the_header():
    doc = structured_document()
    table = doc.blocks[3]
    chunks = [c for c in strategies.get("structure-400").split(doc)
              if table.start <= c.start < table.end]
    assert len(chunks) >= 3
    assert chunks[0].text.startswith("名前 | 値\n項目0")
    assert chunks[0].text == doc.text[chunks[0].start:chunks[0].end]
    row_edges = {e for r in table.rows for e in r}
    for c in chunks[1:]:
        assert c.text == "名前 | 値\n" + doc.text[c.start:c.end]
        assert c.start in row_edges and c.end in row_edges
        assert len(c.text) <= 400
    assert chunks[-1].end == table.end


def test_structure_splits_pre_by_lines_and_never_crosses_a_heading():
    doc = structured_document()
    pre = doc.blocks[5]
    chunks = strategies.get("structure-400").split(doc)
    pieces = [c for c in chunks if pre.start <= c.start < pre.end]
    assert len(pieces) >= 3
    line_edges = {pre.start, pre.end} | {i for i in range(pre.start, pre.end) if doc.text[i] == "\n"} \
        | {i + 1 for i in range(pre.start, pre.end) if doc.text[i] == "\n"}
    assert all(c.start in line_edges and c.end in line_edges for c in pieces)
    heading_starts = [b.start for b in doc.blocks if b.kind in ("heading2", "heading3")]
    assert all(not (c.start < s < c.end) for c in chunks for s in heading_starts)
    assert chunks[-1].text == "short"  # the block after an oversize one starts afresh


def test_structure_packs_small_blocks_whole():
    doc = faq_document()  # no block is over 800 chars
    starts, ends = {b.start for b in doc.blocks}, {b.end for b in doc.blocks}
    chunks = strategies.get("structure-800").split(doc)
    assert len(chunks) < len(doc.blocks) / 2  # blocks were packed together
    assert all(c.start in starts and c.end in ends for c in chunks)


def test_headings_cut_before_h2_or_h3():
    doc = structured_document()
    h2 = strategies.get("heading-h2").split(doc)
    h2h3 = strategies.get("heading-h2h3").split(doc)
    assert [c.text.split("\n")[0] for c in h2] == [T, "表"]
    assert [c.text.split("\n")[0] for c in h2h3] == [T, "表", "コマンド"]
    assert h2[-1].end == len(doc.text)


def test_prefix_indexes_the_heading_path_and_hands_the_text_unchanged():
    doc = structured_document()
    plain = strategies.get("structure-400").split(doc)
    prefixed = strategies.get("structure-400+prefix").split(doc)
    assert [c.text for c in prefixed] == [c.text for c in plain]
    assert prefixed[0].index_text == f"{T}\n{plain[0].text}"
    assert prefixed[-1].index_text == f"{T} ＞ 表 ＞ コマンド\nshort"


def test_structure_rejects_a_bad_size():
    with pytest.raises(ValueError, match="chunk_size must be > 0"):
        structure(0)


# --- LangChain HTML, parent-child -------------------------------------------------------

def test_render_html_carries_every_block():
    html = render_html(structured_document())
    assert "<h2>表</h2>" in html and "<h3>コマンド</h3>" in html
    assert "<tr><th>名前</th><th>値</th></tr>" in html and "<td>項目0</td>" in html
    assert "<pre>$ apt-get install package-0" in html


@pytest.mark.parametrize("name", ["lc-html-header", "lc-html-semantic"])
def test_langchain_html_chunks_map_back_to_their_source(name):
    doc = structured_document()
    chunks = strategies.get(name).split(doc)
    assert chunks
    for c in chunks:
        squeezed = "".join(c.text.split())
        source = "".join(doc.text[c.start:c.end].split()).replace("|", "")
        assert squeezed.replace("|", "") == source, c


def test_parent_child_children_are_recursive_200_with_structure_800_parents():
    doc = faq_document()
    children = strategies.get("parent-child-r200-s800").split(doc)
    assert [(c.start, c.end) for c in children] == \
        [(c.start, c.end) for c in strategies.get("recursive-200").split(doc)]
    parents = strategies.get("structure-800").split(doc)
    for c in children:
        assert c.parent in parents
        shared = min(c.end, c.parent.end) - max(c.start, c.parent.start)
        assert shared * 2 >= c.end - c.start  # it holds (most of) the child


def test_strategy_names_are_stable():
    expected = {"fixed-200", "fixed-400", "fixed-800", "fixed-1600", "fixed-400-ov40",
                "fixed-400-ov80", "fixed-400-ov200", "fixed-800-ov80", "fixed-800-ov160",
                "recursive-200", "recursive-400-ov40", "recursive-800", "heading-h2",
                "heading-h2h3", "structure-400", "structure-800", "structure-400+prefix",
                "structure-800+prefix", "lc-html-header", "lc-html-semantic",
                "parent-child-r200-s800"}
    assert expected <= set(strategies.names())


# chunkeval as it is where LangChain's splitters are not installed (they are an extra): the
# lookup it makes says they are absent, then a command runs as from the shell.
WITHOUT_LANGCHAIN = """
import importlib.util, json, sys
found = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.startswith("langchain") else found(name, *a)
from chunkeval import strategies
from chunkeval.cli import main
if sys.argv[1] == "names":
    print(json.dumps([strategies.names(), strategies.names(all=True)]))
elif sys.argv[1] == "left-out":
    from chunkeval import config
    from chunkeval.session import Session
    print(json.dumps([Session(config.load(command_line={"corpus": c})).left_out
                      for c in sys.argv[2:]]))
else:
    sys.exit(main(sys.argv[1:]))
"""


def _without_langchain(*args, cwd=None):
    return subprocess.run([sys.executable, "-c", WITHOUT_LANGCHAIN, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_without_langchain_its_strategies_run_only_when_named_and_say_what_to_install(
        tmp_path):
    default, known = json.loads(_without_langchain("names").stdout)
    lc = {"lc-html-header", "lc-html-semantic"}
    assert lc <= set(known) and not lc & set(default)
    assert set(default) == {s.name for s in strategies.MATRIX} - lc  # the rest as it was
    listed = _without_langchain("strategies").stdout
    assert "lc-html-header" in listed and "pip install 'chunkeval[langchain]'" in listed
    # where the default matrix runs (the built-in corpus), the two left out are named
    docs = tmp_path / "docs"
    matrix, own = json.loads(_without_langchain("left-out", "debian-ja", str(docs),
                                                cwd=tmp_path).stdout)
    assert matrix.startswith("not run here: lc-html-header, lc-html-semantic, which need an "
                             "optional package: pip install 'chunkeval[langchain]'")
    assert own is None  # a corpus of the project's own runs its splitters and reference

    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## Install\n\nRun the installer.\n", encoding="utf-8")
    named = _without_langchain("run", "--corpus", str(docs), "--queries", "section-titles",
                               "--strategies", "fixed-400,lc-html-header",
                               "--retrievers", "bm25", "--out", str(tmp_path / "out"))
    assert named.returncode != 0 and "Traceback" not in named.stderr
    assert ("strategy 'lc-html-header' needs an optional package: pip install "
            "'chunkeval[langchain]'") in named.stderr
    assert not (tmp_path / "out").exists()  # said before any work


def test_a_built_in_whose_library_a_worker_lacks_fails_that_task_only():
    """A cluster node without an extra: the task of the strategy that needs it is a failure
    saying what to install, and the run goes on."""
    from chunkeval.evaluate import Evaluation
    from chunkeval.results import Failure, Settings

    from helpers import tiny_corpus
    strategies.register(strategies.Strategy("needs-x", "fixed", fixed(400).split),
                        missing="pip install x")
    try:
        evaluation = Evaluation(tiny_corpus(), Settings(), ["section-titles"],
                                result_cache=False)
        [failed] = evaluation.run_task(("section-titles", "needs-x"), ["bm25"])
        assert isinstance(failed, Failure)
        assert "needs an optional package: pip install x" in failed.message
        [done] = evaluation.run_task(("section-titles", "fixed-400"), ["bm25"])
        assert not isinstance(done, Failure)
    finally:
        strategies.unregister("needs-x")


# --- the same observations on the real corpus ------------------------------------------

@pytest.mark.corpus
def test_corpus_recursive_400_ov40_realises_no_overlap_at_most_boundaries(corpus):
    strategy = strategies.get("recursive-400-ov40")
    overlaps = [o for doc in corpus.documents for o in realized_overlaps(strategy.split(doc))]
    assert sum(o == 0 for o in overlaps) > len(overlaps) / 2
    assert max(overlaps) <= 40


@pytest.mark.corpus
def test_corpus_fixed_400_ov200_gives_nearly_twice_the_chunks(corpus):
    count = {name: sum(len(strategies.get(name).split(d)) for d in corpus.documents)
             for name in ("fixed-400", "fixed-400-ov200")}
    assert 1.8 * count["fixed-400"] <= count["fixed-400-ov200"] <= 2 * count["fixed-400"]


@pytest.mark.corpus
def test_corpus_structure_800_keeps_every_invariant(corpus):
    strategy = strategies.get("structure-800")
    found = [str(v) for d in corpus.documents for v in check(strategy, d)]
    assert found == [], "\n".join(found[:10])


def test_keyed_drops_exactly_what_isspace_drops():
    from chunkeval.strategies.langchain_html import _keyed
    text = "a b\u3000c\u00a0d\n\te\u2028f\x1cg\u200bh\u3001 |\U0001f600x\u0085"
    skip = {0, 5, len(text) + 3}  # an offset past the end is ignored
    pos = [i for i, ch in enumerate(text) if not ch.isspace() and i not in skip]
    assert _keyed(text, skip) == ("".join(text[i] for i in pos), pos)
    assert _keyed("") == ("", [])
