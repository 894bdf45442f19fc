"""Small things a new user met on a Markdown docs folder: generator titles, built titles,
titles differing in case, what a cut-rate failure names, and the pages' language."""

import re

from chunkeval.corpus.markdown import parse_markdown
from chunkeval.gate.diffs import describe_cuts
from chunkeval.scoring import cut_blocks, cut_rate
from chunkeval.model import Chunk, Corpus
from chunkeval.queries import build_query_set, generate
from chunkeval.queries.builders import clean_title
from chunkeval.report.svg import declare_language

BODY = "This section explains the topic at some length, so that it makes an answer. " * 2


def md(text: str, doc_id: str):
    doc, _ = parse_markdown(text.encode("utf-8"), doc_id)
    return doc


def test_a_generator_gets_the_page_s_first_heading_as_its_title():
    doc = md(f"## Improving the project\n\n{BODY}\n\n### Removing a clone\n\n{BODY}\n",
             "ch13-03-improving.md")
    assert doc.title == "ch13-03-improving.md"  # no h1, no front matter
    assert {s.title for s in generate.sections_of(doc)} == {"Improving the project"}
    titled = md(f"# The Book\n\n## Part\n\n{BODY}\n", "book.md")
    assert {s.title for s in generate.sections_of(titled)} == {"The Book"}


def test_built_titles_lose_the_separator_left_after_a_number():
    assert clean_title("付録A: キーワード") == "キーワード"
    assert clean_title("付録D - 便利な開発ツール") == "便利な開発ツール"
    assert clean_title("付録E：エディション") == "エディション"
    assert clean_title("1.2. Install") == "Install"
    assert clean_title("Python 3.10+") == "Python 3.10+"  # no number in front


def test_titles_differing_only_in_case_are_one_title_of_several_sections():
    docs = [md(f"# Guide {i}\n\n## {title}\n\n{BODY}\n\n## Unique topic {i}\n\n{BODY}\n",
               f"g{i}.md") for i, title in enumerate(["Use Case", "Use case"])]
    qs = build_query_set(Corpus("c", tuple(docs)), "section-titles")
    assert sorted(q.text for q in qs.queries) == ["Unique topic 0", "Unique topic 1"]
    assert dict(qs.removed)["title of several sections"] == 2


def test_a_cut_rate_failure_names_documents_blocks_and_boundaries():
    doc = md("# T\n\nIntro words.\n\n```\nline one\nline two\nline three\n```\n\n"
             "| a | b |\n|---|---|\n| 1 | 2 |\n", "cut.md")
    pre, table = [b for b in doc.blocks if b.kind in ("pre", "table")]
    at = pre.start + 5
    chunks = [Chunk("cut.md", 0, at, doc.text[:at]), Chunk("cut.md", at, len(doc.text),
                                                           doc.text[at:])]
    cuts = cut_blocks([doc], chunks)
    assert [(d.id, b, inside) for d, b, inside in cuts] == [("cut.md", pre, [at])]
    assert cut_rate([doc], chunks).cut == len(cuts)
    message = describe_cuts(cuts)
    assert "1 cut block(s) in 1 document(s)" in message
    assert f"cut.md pre [{pre.start}:{pre.end}] 'line one line two line three': cut at {at}" \
        in message
    assert describe_cuts([]) == "no table or pre block is cut"


def test_pages_declare_the_corpus_language():
    page = '<!DOCTYPE html>\n<html lang="en">\n<body>{}</body></html>'
    assert '<html lang="ja">' in declare_language(page.format("設定ファイルの場所はどこですか"))
    assert '<html lang="zh">' in declare_language(page.format("配置文件在哪里呢"))
    assert '<html lang="en">' in declare_language(page.format("Where is the file?"))
    assert '<html lang="ja">' in declare_language(page.format("no text"), "ja")


def test_a_cjk_page_names_its_language_s_cjk_fonts_first():
    template = ('<!DOCTYPE html>\n<html lang="en">\n<head><style>body { font-family: '
                'system-ui; }</style></head>\n<body>TEXT</body></html>')

    def page(text):
        return template.replace("TEXT", text)

    ja = declare_language(page("設定ファイルの場所はどこですか"))
    rule = re.search(r"html:lang\(ja\) body, html:lang\(ja\) svg \{ font-family: ([^;]+);", ja)
    assert rule and rule.group(1).startswith('"Noto Sans CJK JP"')
    assert ja.index(rule.group(0)) < ja.index("</head>")
    assert '"Noto Sans CJK SC"' in declare_language(page("配置文件在哪里呢"))
    assert '"Noto Sans CJK KR"' in declare_language(page("설정 파일은 어디에 있습니까"))
    assert "Noto Sans CJK" not in declare_language(page("Where is the file?"))
