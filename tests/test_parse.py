"""HTML -> Document: blocks, offsets, heading paths, tables, pre, CJK joining, boilerplate,
encodings and bad input."""

import gzip
from pathlib import Path

import pytest

from chunkeval.model import BLOCK_KINDS, BLOCK_SEP, TABLE_CELL_SEP
from chunkeval.errors import InputError
from chunkeval.corpus.html import DEFAULT_DROP, css_to_xpath, decode_html, normalize, parse_html

DATA = Path(__file__).parent / "data"


def parse_file(name: str, **kw):
    return parse_html((DATA / name).read_bytes(), name, **kw)


def blocks(doc, kind=None):
    return [(b.kind, doc.block_text(b)) for b in doc.blocks if kind in (None, b.kind)]


def texts(doc, kind):
    return [t for _, t in blocks(doc, kind)]


def parse_str(html: str, **kw):
    return parse_html(html.encode("utf-8"), "t.html", **kw)


@pytest.fixture(scope="module")
def docbook():
    doc, problems = parse_file("parse_docbook.html")
    assert problems == []
    return doc


@pytest.fixture(scope="module")
def sphinx():
    doc, problems = parse_file("parse_sphinx.html")
    assert problems == []
    return doc


@pytest.mark.parametrize("name", ["parse_docbook.html", "parse_sphinx.html",
                                  "parse_noheadings.html", "parse_shift_jis.html"])
def test_blocks_are_ordered_spans_of_the_text(name):
    doc, _ = parse_file(name)
    assert doc.blocks
    pos = 0
    for i, b in enumerate(doc.blocks):
        assert b.kind in BLOCK_KINDS
        assert b.start >= pos and b.end > b.start
        if i:
            assert doc.text[pos:b.start] == BLOCK_SEP
        text = doc.text[b.start:b.end]
        assert text == text.strip() or b.kind == "pre"
        pos = b.end
    assert pos == len(doc.text)
    assert [p.text for p in doc.parts()] == [doc.block_text(b) for b in doc.blocks]


def test_docbook_block_kinds_in_reading_order(docbook):
    assert [k for k, _ in blocks(docbook)] == [
        "heading1", "paragraph", "heading2", "paragraph", "paragraph", "paragraph", "paragraph",
        "table", "heading3", "pre", "item", "item", "item", "heading4", "dl", "dl",
        "heading2", "paragraph", "paragraph"]


def test_title_is_h1_and_heading_paths(docbook):
    assert docbook.title == "第1章 テストの章"
    by_text = {docbook.block_text(b): b for b in docbook.blocks}
    title = "第1章 テストの章"
    assert by_text[title].headings == (title, "", "")
    assert by_text["1.1. 最初の節"].headings == (title, "1.1. 最初の節", "")
    assert by_text["1.1.1. 小節"].headings == (title, "1.1. 最初の節", "1.1.1. 小節")
    # h4 is a block of its own but does not change the path
    assert by_text["深い見出し"].kind == "heading4"
    assert by_text["深い見出し"].headings == (title, "1.1. 最初の節", "1.1.1. 小節")
    # a new h2 clears the h3
    assert by_text["1.2. 二番目の節"].headings == (title, "1.2. 二番目の節", "")
    first = docbook.blocks[1]
    assert first.headings == (title, "", "")


def test_title_falls_back_to_title_element():
    doc, problems = parse_file("parse_noheadings.html")
    assert doc.title == "見出しのない頁"
    assert doc.blocks[0].headings == ("見出しのない頁", "", "")


def test_table_rows_and_header(docbook):
    [b] = [b for b in docbook.blocks if b.kind == "table"]
    rows = [docbook.text[s:e] for s, e in b.rows]
    assert rows == ["パッケージ | 説明", "dpkg | 低水準のパッケージ管理", "apt | 高水準のツール"]
    assert docbook.block_text(b) == "\n".join(rows)
    assert b.header_rows == 1
    # the table's title is kept as text before it
    assert "表1.1 ツールの一覧" in texts(docbook, "paragraph")


def test_th_only_row_is_a_header_and_nested_table_is_flattened(sphinx):
    [b] = [b for b in sphinx.blocks if b.kind == "table"]
    rows = [sphinx.text[s:e] for s, e in b.rows]
    assert rows == ["キー | 値", "a | 1 内側 表"]
    assert b.header_rows == 1


def test_table_sections_in_reading_order():
    doc, _ = parse_str("<h1>T</h1><table><tfoot><tr><td>foot</td></tr></tfoot>"
                       "<tbody><tr><td>body</td><td></td></tr><tr><td></td></tr></tbody>"
                       "<thead><tr><td>head</td></tr></thead></table>")
    [b] = [b for b in doc.blocks if b.kind == "table"]
    assert doc.block_text(b) == f"head\nbody{TABLE_CELL_SEP}\nfoot"
    assert b.header_rows == 1


def test_admonition_layout_table_becomes_paragraphs(docbook):
    assert len(texts(docbook, "table")) == 1
    assert "ヒントの本文は段落として残ります。" in texts(docbook, "paragraph")


def test_pre_is_verbatim(docbook, sphinx):
    assert texts(docbook, "pre") == ["$ apt-get update\n  indented   line\n\nlast line"]
    assert texts(sphinx, "pre") == ["$ dpkg -i foo.deb\n$ echo done"]


def test_pre_keeps_only_inner_newlines():
    doc, _ = parse_str("<h1>T</h1><pre>\n\n  a\n\n</pre>")
    assert texts(doc, "pre") == ["\n  a\n"]


def test_cjk_line_breaks_are_dropped_other_whitespace_is_one_space(docbook):
    assert texts(docbook, "paragraph")[0] == (
        "章の最初の段落です。DocBook は日本語の行を途中で折り返します。"
        "Debian パッケージと apt tool の間は空白になります。")


@pytest.mark.parametrize("raw, want", [
    ("日本語の\n文章", "日本語の文章"),
    ("日本語の\n   文章", "日本語の文章"),
    ("日本語の 文章", "日本語の 文章"),  # a written space stays
    ("句点。\n「引用」", "句点。「引用」"),
    ("Debian\nパッケージ", "Debian パッケージ"),
    ("foo\n\n  bar\tbaz", "foo bar baz"),
    ("  全角\u3000空白  ", "全角\u3000空白"),
])
def test_normalize(raw, want):
    assert normalize(raw) == want


def test_inline_markup_is_text(docbook):
    assert "節の本文で apt-get と 強調 と リンク を含みます。" in texts(docbook, "paragraph")


def test_list_items_with_paragraphs_and_nested_lists(docbook):
    assert texts(docbook, "item") == ["項目一の前半。 項目一の後半。", "項目二", "入れ子の項目"]


def test_list_item_with_pre_keeps_order():
    doc, _ = parse_str("<h1>T</h1><ul><li>before<pre>code</pre>after</li><li>next</li></ul>")
    assert blocks(doc)[1:] == [("item", "before"), ("pre", "code"), ("item", "after"),
                               ("item", "next")]


def test_definition_lists(docbook):
    # a term that already ends with a colon does not get a second one
    assert texts(docbook, "dl") == ["用語: 用語の定義です。", "term: definition text"]


def test_dl_groups_and_lone_terms():
    doc, _ = parse_str("<h1>T</h1><dl><dt>a</dt><dt>b</dt><dd>both</dd>"
                       "<div><dt>c</dt><dd>in div</dd></div><dt>lone</dt></dl>")
    assert texts(doc, "dl") == ["a, b: both", "c: in div", "lone"]


def test_footnotes_keep_label_with_text(docbook, sphinx):
    assert "[1] 脚注の本文です。" in texts(docbook, "paragraph")
    assert "[1] Sphinx footnote text." in texts(sphinx, "paragraph")


@pytest.mark.parametrize("fixture, absent", [
    ("docbook", ["NAVHEADER", "NAVFOOTER", "TOCENTRY", "SCRIPTTEXT", "color: black",
                 "head title"]),
    ("sphinx", ["RELATEDNAV", "ナビゲーション", "SIDEBAR", "FOOTER", "¶", "MERMAIDSRC",
                "manual 1.0"]),
])
def test_boilerplate_is_removed(fixture, absent, request):
    doc = request.getfixturevalue(fixture)
    for text in absent:
        assert text not in doc.text, text


def test_drop_selectors_are_configurable():
    data = (DATA / "parse_docbook.html").read_bytes()
    kept, _ = parse_html(data, "d", drop=())
    assert "NAVHEADER" in kept.text and "TOCENTRY" in kept.text
    # head, script and style are never text, even when not dropped
    assert "head title" not in kept.text and "SCRIPTTEXT" not in kept.text
    fewer, _ = parse_html(data, "d", drop=DEFAULT_DROP + ("div.tip", "ul > li li"))
    assert "ヒント" not in fewer.text and "入れ子の項目" not in fewer.text
    assert "項目二" in fewer.text


@pytest.mark.parametrize("selector", ["div.toc", "#searchbox", "[role=navigation]",
                                      "a.headerlink, pre.mermaid", "div > p", "td [class~=x]",
                                      "[href^='http'] [a$=b] [c*=\"d\"]"])
def test_css_subset_translates(selector):
    import lxml.etree
    lxml.etree.XPath(css_to_xpath(selector))  # compiles


@pytest.mark.parametrize("selector", ["div:first-child", "a + b", "", "div >", "> p", "p ~ q"])
def test_unsupported_css_is_a_clear_error(selector):
    with pytest.raises(ValueError, match="CSS selector"):
        css_to_xpath(selector)


@pytest.mark.parametrize("name, title, body", [
    ("parse_shift_jis.html", "シフトJISの頁", "これはシフトJISで書かれた本文です。表示～できる？"),
    ("parse_euc_jp.xhtml", "EUC-JPの頁", "これはEUC-JPで書かれた本文です。"),
])
def test_declared_japanese_encodings(name, title, body):
    doc, problems = parse_file(name)
    assert problems == []
    assert doc.title == title
    assert body in doc.text


def test_meta_charset_and_bom():
    html = '<html><head><meta charset="euc-jp"></head><body><h1>日本</h1></body></html>'
    doc, problems = parse_html(html.encode("euc_jp"), "m.html")
    assert doc.title == "日本" and problems == []
    doc, problems = parse_html(b"\xef\xbb\xbf<h1>\xe6\x97\xa5</h1>", "bom.html")
    assert doc.title == "日" and problems == []


def test_gzipped_page():
    data = gzip.compress((DATA / "parse_docbook.html").read_bytes())
    doc, problems = parse_html(data, "x.html.gz")
    plain, _ = parse_file("parse_docbook.html")
    assert doc.text == plain.text and problems == []


def test_wrong_declared_encoding_falls_back_with_a_problem():
    html = '<meta charset="utf-8"><h1>シフトJISなのにUTF-8と宣言</h1>'
    doc, problems = parse_html(html.encode("cp932"), "liar.html", path="site/liar.html")
    assert doc.title == "シフトJISなのにUTF-8と宣言"
    [p] = problems
    assert p.path == "site/liar.html"
    assert "utf-8" in p.message and "cp932" in p.message


def test_undeclared_non_utf8_falls_back_with_a_problem():
    doc, problems = parse_html("<h1>日本語のEUC</h1>".encode("euc_jp"), "x.html")
    assert doc.title == "日本語のEUC"
    assert "no declared charset" in problems[0].message


def test_unknown_charset_is_a_problem():
    doc, problems = parse_html(b'<meta charset="klingon"><h1>ok</h1>', "k.html")
    assert doc.title == "ok"
    assert "unknown charset 'klingon'" in problems[0].message


@pytest.mark.parametrize("data, message", [
    (b"", "empty file"),
    (b"  \n\t ", "empty file"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4, "binary file"),
    (bytes(range(128, 256)) * 40, "binary or undecodable"),
    (b"<html><body><!-- nothing --><img src=x></body></html>", "no text"),
    (b"<!-- only a comment -->", "no HTML content"),
    (b"\x1f\x8bnot really gzip", "gzip"),
])
def test_bad_input_is_an_input_error_naming_the_file(data, message):
    with pytest.raises(InputError, match=message) as err:
        parse_html(data, "doc.html", path="dir/doc.html")
    assert err.value.path == "dir/doc.html"
    assert str(err.value).startswith("dir/doc.html: ")


def test_malformed_html_still_parses():
    doc, problems = parse_str("<h1>Broken <b>bold<h2>Sec</i><p>text <table><tr><td>cell"
                              "<p>after</div></span></ul>")
    assert "cell" in doc.text and "text" in doc.text and "after" in doc.text
    assert problems == []


def test_control_characters_and_references_do_not_crash():
    doc, _ = parse_str('<h1>T</h1><p>a\x1fb&#x1f;c&#0;d</p><nav>x</nav>&#31;tail<pre>p\x0cq</pre>')
    assert texts(doc, "paragraph") == ["a b c d"]
    assert texts(doc, "pre") == ["p q"]
    assert "tail" in doc.text


def test_deeply_nested_markup_does_not_crash():
    doc, problems = parse_str("<h1>T</h1><p>kept</p>" + "<div><ul><li>" * 80 + "deep"
                              + "</li></ul></div>" * 80)
    assert "deep" in doc.text and problems == []
    doc, problems = parse_str("<h1>T</h1><p>kept</p>" + "<div><ul><li>" * 400 + "deep"
                              + "</li></ul></div>" * 400)
    assert "kept" in doc.text
    assert "deeply nested" in problems[0].message


def test_no_headings_is_a_problem_not_an_error():
    doc, problems = parse_file("parse_noheadings.html", path="x/parse_noheadings.html")
    assert texts(doc, "paragraph") == ["見出しはありませんが本文はあります。", "Second paragraph."]
    [p] = problems
    assert p.path == "x/parse_noheadings.html" and "no headings" in p.message


def test_decode_reports_byte_offset():
    text, problems = decode_html(b'<meta charset="utf-8">ok\xff\xfe\xfd', "f.html")
    assert "byte 24" in problems[0].message


def _normalize_by_runs(text: str) -> str:
    """The rule of normalize() written run by run, as it was first implemented."""
    import re
    from chunkeval.corpus.html_blocks import _CJK_RE, _WS_RE, BREAK

    def join(m: re.Match) -> str:
        i, j, run = m.start(), m.end(), m.group()
        if BREAK in run:
            return " "
        if ("\n" in run and 0 < i and j < len(text)
                and _CJK_RE.match(text[i - 1]) and _CJK_RE.match(text[j])):
            return ""
        return " "
    return _WS_RE.sub(join, text).strip()


def test_normalize_follows_the_run_by_run_rule():
    import random
    rng = random.Random(0)
    alphabet = ["字", "か", "ア", "。", "１", "a", "b", " ", "\n", "\t", "\xa0", "\x1f", "\u3000",
                "\x0b", "\x0c"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        assert normalize(text) == _normalize_by_runs(text), repr(text)
