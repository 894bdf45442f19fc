"""Query sets: the three builders, their corpus views, sampling, and users' JSONL files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkeval.model import Corpus, Document, Part
from chunkeval.errors import InputError
from chunkeval.queries.builders import clean_title, only_numbers
from chunkeval.queries import (BUILDERS, build_query_set, default_query_sets, is_question,
                               normalize, query_leaks, strip_number)

DATA = Path(__file__).parent / "data"


def doc(doc_id: str, blocks: list[tuple[str, str]]) -> Document:
    """A document from (kind, text) pairs, with heading paths as a parser sets them."""
    path = ["", "", ""]
    parts = []
    for kind, text in blocks:
        if kind == "heading1":
            path = [text, "", ""]
        elif kind == "heading2":
            path[1:] = [text, ""]
        elif kind == "heading3":
            path[2] = text
        parts.append(Part(kind, text, tuple(path)))
    return Document.from_parts(doc_id, blocks[0][1], parts)


LONG = "この段落は四十文字を確実に超える長さの本文で、回答として十分な情報を含んでいます。"
assert len(LONG) >= 40

FAQ = doc("faq/basics.ja.html", [
    ("heading1", "基本のFAQ"),
    ("heading2", "1. 基本"),
    ("paragraph", "基本の節の前書きです。" + LONG),
    ("heading3", "1.1. Debian とは何ですか?"),
    ("paragraph", "Debian は自由なオペレーティングシステムです。" + LONG),
    ("item", "箇条書きの項目も答えに含まれます。"),
    ("heading4", "1.1.1. 補足"),
    ("paragraph", "補足の段落です。"),
    ("heading3", "1.2. 配布物の構成"),
    ("paragraph", "main、contrib、non-free の三つに分かれています。" + LONG),
    ("heading2", "2. インストール方法は? 手順を詳しく知りたいのですが!"),
    ("paragraph", "インストーラの画像を書き込んだ USB メモリから起動します。" + LONG),
    ("heading3", "2.1. 必要なメモリは？"),
    ("paragraph", "最低でも 512MB を推奨します。" + LONG),
    ("heading2", "3. 短い答えの質問ですか"),
    ("paragraph", "はい。"),
])


def faq_corpus() -> Corpus:
    return Corpus("test", (FAQ,))


def block_texts(d: Document) -> list[str]:
    return [d.block_text(b) for b in d.blocks]


def paths(d: Document) -> set[str]:
    return {h for b in d.blocks for h in b.headings if h}


# --- rules -----------------------------------------------------------------------------

@pytest.mark.parametrize("heading, expected", [
    ("1.2. Debian GNU/Linux とは何?", "Debian GNU/Linux とは何?"),
    ("9.4. システムに追加したパッケージの記録を残す方法は? いつ知りたいのですが!",
     "システムに追加したパッケージの記録を残す方法は? いつ知りたいのですが!"),
    ("第1章 はじめに", "はじめに"),
    ("A.1. 付録の節", "付録の節"),
    ("10.  Debian   のバージョン", "Debian のバージョン"),
    ("Debian 12 の新機能", "Debian 12 の新機能"),
    ("1.2.", "1.2."),
])
def test_strip_number(heading, expected):
    assert strip_number(heading) == expected


@pytest.mark.parametrize("heading, expected", [
    ("1.2. Debian GNU/Linux とは何?", True),
    ("9.4. 記録を残す方法は? いつ知りたいのですが!", True),
    ("必要なメモリは？", True),
    ("パッケージとは何ですか", True),
    ("アップグレードできますか。", True),
    ("1.3. 配布物の構成", False),
    ("パッケージの作成方法", False),
    ("いくつかのパッケージ", False),
])
def test_is_question(heading, expected):
    assert is_question(heading) is expected


def test_normalize():
    assert normalize("  a\n\n b\t c ") == "a b c"


# --- faq-headings ----------------------------------------------------------------------

def test_faq_headings_queries_and_gold():
    qs = build_query_set(faq_corpus(), "faq-headings")
    assert [q.text for q in qs.queries] == [
        "Debian とは何ですか?",
        "インストール方法は? 手順を詳しく知りたいのですが!",
        "必要なメモリは？",
    ]  # "短い答えの質問ですか" has a 3-char answer and is skipped
    q1, q2, q3 = qs.queries
    assert all(q.doc_id == FAQ.id for q in qs.queries)
    assert len({q.id for q in qs.queries}) == 3
    # The section runs to the next heading of the same or higher level, sub-headings included.
    assert q1.answer == normalize(
        "Debian は自由なオペレーティングシステムです。" + LONG + " 箇条書きの項目も答えに含まれます。"
        " 1.1.1. 補足 補足の段落です。")
    # An h2 section holds its h3 subsections; a used sub-question heading is not in the gold.
    assert q2.answer.startswith("インストーラの画像")
    assert "最低でも 512MB" in q2.answer and "必要なメモリ" not in q2.answer
    assert all(len(q.answer) >= 40 for q in qs.queries)


def test_faq_headings_view_removes_headings_from_body_and_paths():
    qs = build_query_set(faq_corpus(), "faq-headings")
    view = qs.view["faq/basics.ja.html"]
    texts = block_texts(view)
    for removed in ("1.1. Debian とは何ですか?", "2. インストール方法は? 手順を詳しく知りたいのですが!",
                    "2.1. 必要なメモリは？"):
        assert removed not in texts
        assert removed not in paths(view)
    # Other headings stay, in the body and the paths; the short-answer question stays too.
    for kept in ("1. 基本", "1.1.1. 補足", "1.2. 配布物の構成", "3. 短い答えの質問ですか"):
        assert kept in texts
    assert {"基本のFAQ", "1. 基本", "1.2. 配布物の構成"} <= paths(view)
    # Blocks under a removed heading get "" at that level and keep the rest of the path.
    answer = next(b for b in view.blocks if view.block_text(b).startswith("Debian は自由"))
    assert answer.headings == ("基本のFAQ", "1. 基本", "")
    memory = next(b for b in view.blocks if view.block_text(b).startswith("最低でも"))
    assert memory.headings == ("基本のFAQ", "", "")
    assert query_leaks(qs) == []


def test_citations_of_a_question_are_cut_from_every_document():
    citing = Document.from_parts("faq/other.ja.html", "他の章", [
        Part("heading1", "他の章", ("他の章", "", "")),
        Part("paragraph", "詳しくは「Debian  とは何ですか?」を見てください。", ("他の章", "", "")),
        Part("table", "項目 | 参照\n配布 | 必要なメモリは？ 参照",
             ("他の章", "", ""), ("項目 | 参照", "配布 | 必要なメモリは？ 参照"), 1),
        Part("paragraph", "「短い答えの質問ですか」は問いになっていません。", ("他の章", "", "")),
    ])
    qs = build_query_set(Corpus("test", (FAQ, citing)), "faq-headings")
    view = qs.view["faq/other.ja.html"]
    assert block_texts(view) == ["他の章", "詳しくは「」を見てください。", "項目 | 参照\n配布 |  参照",
                                 "「短い答えの質問ですか」は問いになっていません。"]
    table = view.blocks[2]
    assert [view.text[a:b] for a, b in table.rows] == ["項目 | 参照", "配布 |  参照"]
    assert query_leaks(qs) == []
    # A question cited inside another question's answer is cut from that gold too.
    assert all("とは何ですか?" not in q.answer for q in qs.queries)


@pytest.mark.parametrize("name", BUILDERS)
def test_gold_is_a_stretch_of_the_view(name):
    corpus = Corpus("test", (FAQ, QA, TITLES))
    qs = build_query_set(corpus, name)
    assert len(qs) > 0
    for q in qs.queries:
        assert q.answer in normalize(qs.view[q.doc_id].text), q.id
        assert len(q.answer) >= 40
        assert q.answer == normalize(q.answer)
    assert query_leaks(qs) == []


def test_leak_check_sees_a_heading_left_in_a_path():
    qs = build_query_set(faq_corpus(), "faq-headings")
    d = qs.view[FAQ.id]
    parts = d.parts()
    parts[1] = Part(parts[1].kind, parts[1].text, ("基本のFAQ", "2. インストール方法は? 手順を詳しく知りたいのですが!", ""))
    leaky = Corpus("test", (Document.from_parts(d.id, d.title, parts),))
    from dataclasses import replace
    assert query_leaks(replace(qs, view=leaky)) == [(qs.queries[1].id, FAQ.id)]


# --- faq-qa ----------------------------------------------------------------------------

QA = doc("blog/backup.html", [
    ("heading1", "バックアップのよくある質問"),
    ("heading2", "取得の頻度"),
    ("paragraph", "Q. バックアップは毎日取得する必要がありますか？"),
    ("paragraph", "A. 業務データは毎日の差分取得と週一回の完全取得を組み合わせるのが基本です。"),
    ("paragraph", "差分の保持期間は最低でも四週間を目安にしてください。"),
    ("paragraph", "Ｑ．取得の時刻はいつがよいですか？"),
    ("paragraph", "Ａ．深夜二時です。"),
    ("heading2", "復元"),
    ("paragraph", "Q．誤って削除したファイルを自分で戻せますか？"),
    ("paragraph", "A. 共有フォルダの「以前のバージョン」から、過去三十日分までは利用者自身で復元できます。"),
    ("item", "右クリックして「プロパティ」を開く"),
    ("paragraph", "Q. 復元にかかる時間の目安は？\nA. 一ギガバイトあたりおよそ五分です。テープから戻す場合は一営業日を見込んでください。"),
    ("paragraph", "Q. この質問には答えがありません"),
    ("paragraph", "補足の段落です。" + LONG),
])


def test_faq_qa_pairs():
    qs = build_query_set(Corpus("test", (QA,)), "faq-qa")
    assert [q.text for q in qs.queries] == [
        "バックアップは毎日取得する必要がありますか？",
        "誤って削除したファイルを自分で戻せますか？",
        "復元にかかる時間の目安は？",
    ]  # the 8-char answer and the question without an answer are not queries
    first, second, third = qs.queries
    # The answer: the A. text without its marker, then paragraphs up to the next Q.
    assert first.answer == ("業務データは毎日の差分取得と週一回の完全取得を組み合わせるのが基本です。 "
                            "差分の保持期間は最低でも四週間を目安にしてください。")
    assert second.answer.endswith("右クリックして「プロパティ」を開く")  # stops at the next Q.
    assert third.answer.startswith("一ギガバイトあたり") and "Q." not in third.answer


def test_faq_qa_view_drops_question_paragraphs_only():
    qs = build_query_set(Corpus("test", (QA,)), "faq-qa")
    texts = block_texts(qs.view[QA.id])
    assert not any(t.startswith("Q. バックアップ") or t.startswith("Q．誤って") for t in texts)
    assert any(t.startswith("A. 業務データ") for t in texts)  # answers stay
    # A question and its answer in one paragraph: the answer part stays.
    assert "A. 一ギガバイトあたりおよそ五分です。テープから戻す場合は一営業日を見込んでください。" in texts
    # Questions that are not queries stay.
    assert "Ｑ．取得の時刻はいつがよいですか？" in texts
    assert "Q. この質問には答えがありません" in texts
    assert query_leaks(qs) == []


def test_repeated_question_is_asked_once_and_removed_everywhere():
    other = doc("blog/backup-copy.html", [("heading1", "写し"), *[(k, t) for k, t in
                ((b.kind, QA.block_text(b)) for b in QA.blocks[2:5])]])
    qs = build_query_set(Corpus("test", (QA, other)), "faq-qa")
    texts = [q.text for q in qs.queries]
    assert texts.count("バックアップは毎日取得する必要がありますか？") == 1
    assert qs.queries[0].doc_id == "blog/backup-copy.html"  # the first in document-id order
    assert query_leaks(qs) == []


# --- section-titles --------------------------------------------------------------------

TITLES = doc("guide/network.html", [
    ("heading1", "ネットワーク設定"),
    ("heading2", "1. 固定アドレスの設定"),
    ("paragraph", "設定ファイルにアドレスとネットマスクを書きます。" * 3),
    ("paragraph", "ゲートウェイも忘れずに指定してください。" * 10),
    ("paragraph", "この段落は上限を超えるので答えに入りません。"),
    ("heading3", "1.1. 名前解決"),
    ("paragraph", "resolv.conf にネームサーバを書きます。" + LONG),
    ("heading3", "1.2. 概要"),
    ("paragraph", "総称的な見出しは問いになりません。" + LONG),
    ("heading3", "1.3. X"),
    ("paragraph", "一文字の見出しも問いになりません。" + LONG),
    ("heading2", "2. 無線の設定"),
    ("paragraph", "短い。"),
    ("heading2", "3. 共通の見出し"),
    ("paragraph", "同じ見出しが別の文書にもあるので、どちらも問いにしません。" + LONG),
    ("heading2", "4. 接続できないときは?"),
    ("paragraph", "問いの形の見出しは faq-headings の受け持ちです。" + LONG),
    ("heading2", "5. 長い一段落"),
    ("paragraph", "あ" * 500),
])
OTHER = doc("guide/other.html", [
    ("heading1", "別の文書"),
    ("heading2", "7. 共通の見出し"),
    ("paragraph", "もう一方の共通の見出しの本文です。" + LONG),
])


def test_section_titles_queries():
    qs = build_query_set(Corpus("test", (TITLES, OTHER)), "section-titles")
    assert [q.text for q in qs.queries] == ["固定アドレスの設定", "名前解決", "長い一段落"]
    fixed, names, long_one = qs.queries
    # Whole blocks until at least 200 chars, then capped at 400 (here at a sentence end).
    assert 200 <= len(fixed.answer) <= 400
    assert fixed.answer.startswith("設定ファイルに") and fixed.answer.endswith("。")
    assert "上限を超える" not in fixed.answer
    assert names.answer.startswith("resolv.conf")
    assert long_one.answer == "あ" * 400


def test_section_titles_view():
    qs = build_query_set(Corpus("test", (TITLES, OTHER)), "section-titles")
    view = qs.view["guide/network.html"]
    texts, heads = block_texts(view), paths(view)
    for gone in ("1. 固定アドレスの設定", "1.1. 名前解決", "5. 長い一段落"):
        assert gone not in texts and gone not in heads
    for kept in ("1.2. 概要", "2. 無線の設定", "3. 共通の見出し", "4. 接続できないときは?"):
        assert kept in texts
    assert block_texts(qs.view["guide/other.html"]) == block_texts(OTHER)
    assert query_leaks(qs) == []


# --- determinism and sampling ----------------------------------------------------------

def many_titles(n: int) -> Corpus:
    docs = []
    for d in range(n // 10):
        blocks = [("heading1", f"文書{d}")]
        for s in range(10):
            blocks += [("heading2", f"{s + 1}. 第{d}文書の話題{s}"), ("paragraph", f"話題{d}-{s}の本文。" + LONG)]
        docs.append(doc(f"d{d:02d}.html", blocks))
    return Corpus("many", tuple(docs))


def dump(qs) -> str:
    return json.dumps({"name": qs.name, "queries": [[q.id, q.text, q.doc_id, q.answer] for q in qs.queries],
                       "view": [d.to_json() for d in qs.view.documents]}, ensure_ascii=False)


def test_same_input_same_query_set():
    a = build_query_set(many_titles(60), "section-titles", max_queries=25)
    b = build_query_set(many_titles(60), "section-titles", max_queries=25)
    assert a.fingerprint == b.fingerprint
    assert dump(a) == dump(b)


def test_sampling_keeps_candidate_order_and_depends_on_seed():
    corpus = many_titles(60)
    full = build_query_set(corpus, "section-titles", max_queries=1000)
    assert len(full) == 60
    ids = [q.id for q in full.queries]
    small = build_query_set(corpus, "section-titles", max_queries=20)
    assert len(small) == 20
    picked = [q.id for q in small.queries]
    assert picked == [i for i in ids if i in set(picked)]  # a subset, in candidate order
    other = build_query_set(corpus, "section-titles", max_queries=20, seed=1)
    assert [q.id for q in other.queries] != picked
    # Only the sampled headings leave the view.
    view_heads = {h for d in small.view.documents for h in block_texts(d)}
    assert sum(q.text in {strip_number(h) for h in view_heads} for q in full.queries) == 40
    assert query_leaks(small) == []


def test_query_ids_do_not_depend_on_sampling():
    corpus = many_titles(30)
    full = {q.text: q.id for q in build_query_set(corpus, "section-titles").queries}
    for q in build_query_set(corpus, "section-titles", max_queries=5, seed=3).queries:
        assert full[q.text] == q.id


def test_default_query_sets():
    assert default_query_sets(Corpus("t", (FAQ,))) == ["faq-headings", "section-titles"]
    assert default_query_sets(Corpus("t", (QA,))) == ["faq-qa", "section-titles"]
    assert default_query_sets(Corpus("t", (doc("x.html", [("heading1", "題"), ("paragraph", "本文")]),))) == []


def test_unknown_spec_names_the_builders(tmp_path):
    with pytest.raises(InputError) as e:
        build_query_set(faq_corpus(), "faq-everything")
    for name in BUILDERS:
        assert name in str(e.value)
    with pytest.raises(InputError):
        build_query_set(faq_corpus(), str(tmp_path))


# --- a user's JSONL file ---------------------------------------------------------------

def two_docs() -> Corpus:
    return Corpus("user", (FAQ, QA,
                           doc("faq/basics.en.html", [("heading1", "Basics"), ("paragraph", "English text.")])))


def write_lines(tmp_path: Path, lines: list) -> Path:
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(l if isinstance(l, str) else json.dumps(l, ensure_ascii=False)
                              for l in lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_good_lines(tmp_path):
    text = QA.text
    start = text.index("共有フォルダ")
    path = write_lines(tmp_path, [
        {"id": "a", "query": "毎日取得する?", "doc": "blog/backup.html",
         "answer": "週一回の完全取得を\n  組み合わせる"},
        {"id": "b", "query": "戻せる?", "doc": "blog/backup", "start": start, "end": start + 30},
        {"id": 3, "query": "とは?", "doc": "faq/basics.ja", "answer": "自由なオペレーティングシステム"},
        "",
    ])
    qs = build_query_set(two_docs(), str(path))
    assert qs.problems == ()
    assert qs.name == "mine"
    assert [(q.id, q.doc_id) for q in qs.queries] == [
        ("a", "blog/backup.html"), ("b", "blog/backup.html"), ("3", "faq/basics.ja.html")]
    assert qs.queries[0].answer == "週一回の完全取得を 組み合わせる"
    assert qs.queries[1].answer == normalize(text[start:start + 30])
    assert qs.view is not None and qs.view.fingerprint == two_docs().fingerprint


def test_jsonl_bad_lines_are_problems_with_file_and_line(tmp_path):
    good = {"id": "ok", "query": "q", "doc": "blog/backup.html", "answer": "深夜二時です。"}
    path = write_lines(tmp_path, [
        good,                                                          # 1
        "{not json",                                                   # 2
        {"id": "m", "doc": "blog/backup.html", "answer": "深夜"},       # 3 no query
        {"id": "u", "query": "q", "doc": "nowhere.html", "answer": "x"},  # 4
        {"id": "amb", "query": "q", "doc": "faq/basics", "answer": "x"},  # 5 .ja / .en
        {"id": "nf", "query": "q", "doc": "blog/backup.html", "answer": "書かれていない文"},  # 6
        {"id": "ok", "query": "q", "doc": "blog/backup.html", "answer": "深夜"},  # 7 dup id
        {"id": "off", "query": "q", "doc": "blog/backup.html", "start": 5, "end": 10 ** 6},  # 8
        [1, 2],                                                        # 9
        {"id": "na", "query": "q", "doc": "blog/backup.html"},          # 10 no answer
    ])
    qs = build_query_set(two_docs(), str(path))
    assert [q.id for q in qs.queries] == ["ok"]
    by_line = {p.line: p for p in qs.problems}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert all(p.path == str(path) for p in qs.problems)
    assert "not JSON" in by_line[2].message
    assert "query" in by_line[3].message
    assert "nowhere.html" in by_line[4].message
    assert "ambiguous" in by_line[5].message and "faq/basics.en.html" in by_line[5].message
    assert "not found" in by_line[6].message and "skipped" in by_line[6].message
    assert "duplicate" in by_line[7].message
    assert "start" in by_line[8].message
    assert "answer" in by_line[10].message
    assert str(by_line[4]).startswith(f"{path}:4: ")


def test_jsonl_without_usable_lines_is_an_error(tmp_path):
    path = write_lines(tmp_path, ["{oops"])
    with pytest.raises(InputError, match=r"no usable queries.*:1: not JSON"):
        build_query_set(two_docs(), str(path))
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="UTF-8"):
        build_query_set(two_docs(), str(tmp_path / "bin.jsonl"))


def test_jsonl_sampling(tmp_path):
    path = write_lines(tmp_path, [{"id": f"q{i}", "query": "q", "doc": "blog/backup.html",
                                   "answer": "深夜二時です。"} for i in range(30)])
    a = build_query_set(two_docs(), str(path), max_queries=7, seed=4)
    b = build_query_set(two_docs(), str(path), max_queries=7, seed=4)
    assert len(a) == 7 and a.fingerprint == b.fingerprint
    assert [q.id for q in a.queries] == sorted((q.id for q in a.queries), key=lambda i: int(i[1:]))


# --- through the HTML parser -----------------------------------------------------------

def parsed(name: str) -> Document:
    parse = pytest.importorskip("chunkeval.corpus.html")
    document, _problems = parse.parse_html((DATA / name).read_bytes(), name, path=DATA / name)
    return document


def test_parsed_qa_article():
    qs = build_query_set(Corpus("html", (parsed("qa_basic.html"),)), "faq-qa")
    assert [q.text for q in qs.queries] == [
        "バックアップは毎日取得する必要がありますか？",
        "誤って削除したファイルを自分で戻せますか？",
        "復元にかかる時間の目安は？",
    ]
    assert qs.queries[0].answer.endswith("最低でも四週間を目安にしてください。")
    assert "以前のバージョン" in qs.queries[1].answer
    assert query_leaks(qs) == []


def test_parsed_faq_headings():
    d = parsed("qa_headings.html")
    qs = build_query_set(Corpus("html", (d,)), "faq-headings")
    assert [q.text for q in qs.queries] == [
        "パッケージとは何ですか?",
        "アップグレードした記録を残す方法は? いつ何が変わったのか知りたいのですが!",
    ]
    assert qs.queries[1].answer.startswith("管理ツールはすべての操作を")
    assert query_leaks(qs) == []
    titles = build_query_set(Corpus("html", (d,)), "section-titles")
    assert [q.text for q in titles.queries] == ["基本の考え方", "依存関係の解決"]


# --- the real corpus -------------------------------------------------------------------

@pytest.mark.corpus
def test_debian_faq_headings(corpus):
    qs = build_query_set(corpus, "faq-headings", max_queries=100_000)
    assert len(qs) >= 100
    assert sum(q.doc_id.startswith("debian-faq-ja/") for q in qs.queries) >= 100
    assert query_leaks(qs) == []


@pytest.mark.corpus
def test_debian_section_titles(corpus):
    qs = build_query_set(corpus, "section-titles", max_queries=100_000)
    assert len(qs) >= 500
    assert query_leaks(qs) == []
    assert len(build_query_set(corpus, "section-titles")) == min(800, len(qs))


@pytest.mark.corpus
def test_debian_default_sets(corpus):
    # The Debian manuals write no "Q. / A." pairs.
    assert default_query_sets(corpus) == ["faq-headings", "section-titles"]


def test_the_trie_scrubber_cuts_what_an_alternation_of_the_questions_cuts():
    import random
    import re

    from chunkeval.queries.builders import _scrubber
    rng = random.Random(3)
    words = ["どう", "すれば", "pool", "pool dir", "か?", "a", "ab", "abc"]
    for _ in range(300):
        questions = {" ".join(rng.choice(words) for _ in range(rng.randrange(1, 4)))
                     for _ in range(rng.randrange(1, 6))}
        longest_first = sorted(questions, key=lambda t: (-len(t), t))
        plain = re.compile("|".join(r"\s+".join(map(re.escape, t.split(" ")))
                                    for t in longest_first))
        scrub = _scrubber(questions)
        for _ in range(5):
            text = "".join(rng.choice([*words, " ", "\n  ", "x"]) for _ in range(12))
            assert scrub(text) == plain.sub("", text), (questions, text)


# --- section titles that identify their section -------------------------------------------

@pytest.mark.parametrize("heading, expected", [
    ("Create an Engine { #create-an-engine }", "Create an Engine"),
    ("Headers {#headers .wide}", "Headers"),
    ("Options {: #options}", "Options"),
    ("Call `uvicorn` with **care** and *speed*", "Call uvicorn with care and speed"),
    ("Read [the guide](guide.md) first", "Read the guide first"),
    ("Permalinks¶", "Permalinks"),
    ("Closing hashes ##", "Closing hashes"),
    ("Why C#", "Why C#"),
    ("snake_case_names", "snake_case_names"),
    ("2.3. Install <code>apt</code>", "Install apt"),
])
def test_clean_title(heading, expected):
    assert clean_title(heading) == expected


@pytest.mark.parametrize("title, dropped", [
    ("(2019-05-16)", True), ("0.22.0 (2019-05-16)", True), ("Release 1.2.3", True),
    ("v0.95.1", True), ("May 16, 2019", True), ("2024年3月1日", True), ("42", True),
    ("Python 3.8+", False), ("Step 5: return", False), ("HTTP/2", False),
    ("FastAPI 0.100.0", False), ("Mayday", False),
])
def test_only_numbers(title, dropped):
    assert only_numbers(clean_title(title)) is dropped


def _pages(n_docs: int, sections: int, *, big: int = 0) -> Corpus:
    docs = []
    for d in range(n_docs):
        count = big if d == 0 and big else sections
        blocks = [("heading1", f"Page {d}")]
        for s in range(count):
            blocks += [("heading2", f"Topic {d} {s} of the manual {{ #topic-{d}-{s} }}"),
                       ("paragraph", f"The text of topic {d}-{s} says enough to be an answer.")]
        docs.append(doc(f"p{d:02d}.md", blocks))
    return Corpus("pages", tuple(docs))


def test_every_rule_of_the_section_titles_removes_and_counts():
    changelog = doc("changes.md", [
        ("heading1", "Changes"),
        ("heading2", "0.22.0 (2019-05-16)"), ("paragraph", LONG),
        ("heading2", "Release 0.21"), ("paragraph", LONG),
        ("heading2", "Recap"), ("paragraph", LONG),
        ("heading2", "Overview"), ("paragraph", LONG),
        ("heading2", "Use `pip` { #use-pip }"), ("paragraph", "Short."),
        ("heading2", "Use **apt** { #use-apt }"), ("paragraph", LONG)])
    other = doc("guide.md", [("heading1", "Guide"), ("heading2", "Recap"), ("paragraph", LONG)])
    qs = build_query_set(Corpus("c", (changelog, other)), "section-titles")
    assert [q.text for q in qs.queries] == ["Use apt"]
    assert dict(qs.removed) == {"only a date, version or number": 2, "generic title": 1,
                                "title of several sections": 2,
                                "answer under 40 characters": 1}
    assert qs.candidates == 7
    assert query_leaks(qs) == []
    # the view loses the heading as written, attribute list and all
    assert not any("use-apt" in h for d in qs.view.documents for h in block_texts(d))


def test_no_document_supplies_more_than_a_tenth_of_a_set():
    corpus = _pages(12, 3, big=40)  # one page of 40 headings among 11 of 3
    qs = build_query_set(corpus, "section-titles")
    per_doc = Counter(q.doc_id for q in qs.queries)
    assert max(per_doc.values()) <= 0.10 * len(qs)
    assert per_doc["p00.md"] == max(per_doc.values())  # the big page still gives the most
    assert dict(qs.removed)["over one document's share (10%)"] == 40 - per_doc["p00.md"]
    assert not any("{" in q.text for q in qs.queries)
    # sampled down, still spread evenly
    small = build_query_set(_pages(20, 10), "section-titles", max_queries=50)
    counts = Counter(q.doc_id for q in small.queries).values()
    assert len(small) == 50 and max(counts) - min(counts) <= 1
    # a corpus of few pages keeps its sets whole: the share cannot apply
    few = build_query_set(_pages(3, 5, big=20), "section-titles")
    assert len(few) == 30


def test_html_permalinks_are_not_part_of_the_query(tmp_path):
    from chunkeval.corpus import load_corpus
    body = "<p>" + "The daemon reads its configuration at start and on reload. " * 3 + "</p>"
    for n in range(2):
        (tmp_path / f"page{n}.html").write_text(
            f"<html><head><title>Manual {n}</title></head><body><h1>Manual {n}</h1>"
            f'<h2>Configure daemon {n}<a class="headerlink" href="#c">¶</a></h2>{body}'
            f'<h2>Reload daemon {n}<a class="headerlink" href="#r">¶</a></h2>{body}'
            "</body></html>", encoding="utf-8")
    qs = build_query_set(load_corpus(str(tmp_path)), "section-titles")
    assert sorted(q.text for q in qs.queries) == [
        "Configure daemon 0", "Configure daemon 1", "Reload daemon 0", "Reload daemon 1"]


@given(st.lists(st.text(alphabet="ab c\n", max_size=30), min_size=1, max_size=4), st.data())
def test_the_leak_prefilter_never_rules_out_a_text_that_occurs(parts, data):
    from chunkeval.queries.builders import _may_occur
    haystack = "\n".join(normalize(p) for p in parts)
    words = set(haystack.split())
    start = data.draw(st.integers(0, len(haystack)))
    end = data.draw(st.integers(start, len(haystack)))
    assert _may_occur(haystack[start:end], words)  # every piece of the text occurs in it
    other = data.draw(st.text(alphabet="ab c\n", max_size=12))
    assert _may_occur(other, words) or other not in haystack


def test_the_leak_prefilter_rules_out_a_question_with_a_word_the_page_lacks():
    from chunkeval.queries.builders import _may_occur
    words = set("how do I back up the disk".split())
    assert not _may_occur("how do I restore the disk", words)
    assert _may_occur("how do I back up", words)
    assert _may_occur("restore", words)  # one word: nothing to rule out by
