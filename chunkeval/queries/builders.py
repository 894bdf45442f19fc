"""Query sets built from the corpus itself: FAQ headings, "Q. / A." pairs, section titles.

A built set's view is the corpus with every heading or
question paragraph used as a query removed from the body and from the heading paths, and
(for questions) every citation of it cut out, so no chunk can contain its own query.
Candidates left out by sampling stay in the view. The gold is the answer text as it reads
in the view, whitespace-normalised, so it is one contiguous stretch of the view's text.

Everything is deterministic: candidates are ordered by document id then position, and a
sample of at most `max_queries` is drawn with `random.Random(seed)` and kept in that order.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..model import Corpus, Document, Part, Query, QuerySet

BUILDERS = ("faq-headings", "faq-qa", "section-titles")

MIN_GOLD = 40  # shorter answers say too little to score
TITLE_GOLD_TARGET = 200  # section-titles: whole blocks until the gold is this long...
TITLE_GOLD_CAP = 400  # ...but never longer than this
# No document supplies more of a built set than this (on corpora of at least 1 / DOCUMENT_SHARE
# documents with candidates): one long page must not decide a gate.
DOCUMENT_SHARE = 0.10
# What removes a candidate, in the order the rules apply (corpus info counts each).
RULES = ("only a date, version or number", "generic title", "title of several sections",
         f"answer under {MIN_GOLD} characters", "asked twice", "over one document's share",
         "beyond max_queries")

# A section number in front of a heading: "1.2. ", "A.1 ", "第1章 ", "付録A ", and the
# separator after it ("付録A: ", "付録D - ", "付録E：").
_NUMBER = re.compile(
    r"^(?:第\s*[0-9０-９一二三四五六七八九十百]+\s*[章節部項編]"
    r"|付録\s*[A-ZＡ-Ｚ0-9０-９]+\.?"
    r"|[A-Z]\.(?:[0-9]+\.?)*(?=\s)"
    r"|[0-9]+(?:\.[0-9]+)*\.?(?=\s))(?:\s*[:：\-‐–—－ー・]?\s+|\s*[:：]\s*|\s*)")

# Question headings. Debian's FAQ asks with "?"/"？" (often mid-heading: "…方法は? …知りたいのですが!");
# a polite question may end in "か" with or without "。".
_QUESTION_MARK = re.compile(r"[?？]")
_QUESTION_END = re.compile(r"(?:です|ます|でしょう|ません|ました|のです|んです|ない)か[。．.!！]?$")

_Q_MARK = re.compile(r"^\s*[QＱ]\s*[0-9０-９]*\s*[.．:：]\s*")
_A_MARK = re.compile(r"^\s*[AＡ]\s*[0-9０-９]*\s*[.．:：]\s*")
# An answer inside the question's paragraph ("Q. …<br>A. …"; a parser may turn the break
# into a space).
_A_INLINE = re.compile(r"\s[AＡ][0-9０-９]*\s*[.．:：]")

# Titles that name no topic of their own: a query made of them finds nothing in particular.
# ("copyright" stays a topic: in a packaging guide it is the name of a file.)
GENERIC_TITLES = frozenset({
    "概要", "はじめに", "序文", "序論", "目次", "まとめ", "その他", "注意", "注記", "注", "例",
    "参考", "参考文献", "関連項目", "付録", "索引", "謝辞", "変更履歴",
    "overview", "introduction", "notes", "note", "references", "see also", "index",
    "example", "examples", "summary", "contents",
})


def normalize(text: str) -> str:
    """Whitespace runs become one space; ends stripped."""
    return " ".join(text.split())


def strip_number(heading: str) -> str:
    """A heading's text without its section number ("1.2. ", "第1章 ")."""
    text = normalize(heading)
    return _NUMBER.sub("", text, count=1).strip() or text


def is_question(heading: str) -> bool:
    text = clean_title(heading)
    return bool(_QUESTION_MARK.search(text) or _QUESTION_END.search(text))


# What a heading carries besides its words: a Markdown attribute list ("{ #create-an-engine }",
# "{#id .class}", "{: #id}"), a permalink mark ("¶", "#", "§", "🔗"), inline markup
# (code, emphasis, links, tags). None of it is something a reader would ask.
_ATTRIBUTES = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")
_PERMALINK = re.compile(r"\s*[¶§\U0001F517]+\s*$|\s+#+\s*$")  # not the "#" of "C#"
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|(?<!\w)_)(?=\S)(.+?)(?<=\S)\1")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def clean_title(heading: str) -> str:
    """A heading as a reader would ask for it: its words without attribute lists, permalink
    marks, inline markup or the section number."""
    text = _ATTRIBUTES.sub("", normalize(heading))
    text = _PERMALINK.sub("", _TAG.sub("", _LINK.sub(r"\1", text)))
    text = _EMPHASIS.sub(r"\2", _CODE.sub(r"\1", text))
    return strip_number(text)


# A title that is only a date, a version or a number ("(2019-05-16)" from
# "## 0.22.0 (2019-05-16)", "Release 1.2", "2024年3月") names no topic a question asks for.
_NUMBERS = re.compile(r"(?i)(?<![^\W\d_])v?[0-9０-９]+(?:[.\-_/:][0-9０-９]+)*(?:[a-z]{1,3}[0-9]*)?"
                      r"(?![^\W\d_])")
_DATE_WORDS = re.compile(
    r"(?i)\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|version|release|rev)\b"
    r"|[年月日版]")
_LETTER = re.compile(r"[^\W\d_]")
_OTHER_SPACE = re.compile(r"\s")


def only_numbers(title: str) -> bool:
    """True when nothing but dates, versions, numbers and punctuation is left of a title."""
    return not _LETTER.search(_DATE_WORDS.sub(" ", _NUMBERS.sub(" ", title)))


# ---------------------------------------------------------------------------------------
# Edits: what a view drops or changes in one document.

@dataclass
class _Edit:
    drop: set[int] = field(default_factory=set)  # block indices removed from the body
    blank: list[tuple[int, int, int]] = field(default_factory=list)  # (level, first, end)
    replace: dict[int, str] = field(default_factory=dict)  # block index -> new text

    def add(self, other: "_Edit") -> None:
        self.drop |= other.drop
        self.blank += other.blank
        self.replace.update(other.replace)


@dataclass
class _Candidate:
    doc_id: str
    id: str
    text: str
    edit: _Edit  # what removing this query from the view takes
    gold_blocks: tuple[int, int]  # [first, end) block range the gold is read from
    answer_mark: bool = False  # the first gold block starts with "A.", not part of the gold


def _section_end(doc: Document, i: int) -> int:
    """Index after the last block of the section headed by block i."""
    level = doc.blocks[i].level
    for j in range(i + 1, len(doc.blocks)):
        if doc.blocks[j].is_heading and doc.blocks[j].level <= level:
            return j
    return len(doc.blocks)


def _heading_edit(doc: Document, i: int) -> _Edit:
    level = doc.blocks[i].level
    edit = _Edit(drop={i})
    if level in (2, 3):  # the heading path holds (title, h2, h3)
        edit.blank.append((level, i, _section_end(doc, i)))
    return edit


Scrub = Callable[[str], str]


def _scrubber(questions: Iterable[str]) -> Scrub | None:
    """Cuts every occurrence of these questions out of a text.

    Manuals cite their own FAQ entries by title ("「pool ディレクトリには何がありますか?」を
    見てください"); left in, such a citation hands the retriever its query verbatim."""
    texts = set(questions)
    if not texts:
        return None
    pattern = re.compile(_trie_pattern(texts))
    return lambda text: pattern.sub("", text)


def _trie_pattern(texts: Iterable[str]) -> str:
    """One regex matching the longest of `texts` at a position, a space matching any run of
    whitespace. Built as a trie: a plain alternation of thousands of questions costs time
    in proportion to their number at every character scrubbed, and to compile."""
    end = ""  # the key marking that a text ends at this node
    trie: dict = {}
    for t in texts:
        node = trie
        for ch in t:
            node = node.setdefault(ch, {})
        node[end] = {}

    def emit(node: dict) -> str:
        out = []
        while True:  # a chain of single children is a plain run of characters
            chars = [c for c in node if c != end]
            if len(chars) == 1 and end not in node:
                out.append(_char(chars[0]))
                node = node[chars[0]]
                continue
            break
        if chars:
            body = "(?:" + "|".join(_char(c) + emit(node[c]) for c in sorted(chars)) + ")"
            out.append(body + "?" if end in node else body)  # greedy: the longest text wins
        return "".join(out)

    return emit(trie)


def _char(c: str) -> str:
    return r"\s+" if c == " " else re.escape(c)


def _view_parts(doc: Document, edit: _Edit, scrub: Scrub | None,
                parts: list[Part] | None = None) -> list[Part | None]:
    """The document's parts (doc.parts(), unless given) as the view has them, None where a
    block is dropped. Linear in the document: it runs on documents of many megabytes."""
    parts = doc.parts() if parts is None else parts
    # Which blocks have each heading level blanked: a sweep over the ranges, not a scan of
    # every range for every block.
    depth: dict[int, list[int]] = {}
    for level, first, end in edit.blank:
        if level not in depth:
            depth[level] = [0] * (len(parts) + 1)
        d = depth[level]
        d[first] += 1
        d[end] -= 1
    blanked = {level: list(itertools.accumulate(d)) for level, d in depth.items()}
    if scrub is not None:
        # A heading path repeats on every block of its section: scrub each text once.
        scrub = functools.lru_cache(maxsize=4096)(scrub)
    out: list[Part | None] = []
    for i, p in enumerate(parts):
        if i in edit.drop:
            out.append(None)
            continue
        blank = [level for level, inside in blanked.items() if inside[i] > 0]
        if scrub is None and not blank and i not in edit.replace:
            out.append(p)
            continue
        headings = list(p.headings)
        for level in blank:
            headings[level - 1] = ""
        text, rows = edit.replace.get(i, p.text), p.rows
        if scrub is not None:
            headings = [scrub(h) if h else h for h in headings]
            if rows:
                rows = tuple(scrub(r) for r in rows)
                text = "\n".join(rows)
            else:
                text = scrub(text)
        out.append(Part(p.kind, text, tuple(headings), rows, p.header_rows, p.page))
    return out


def _gold(parts: list[Part | None], cand: _Candidate, cap: bool) -> tuple[str, tuple[int, ...]]:
    """The candidate's gold text, and the pages of the blocks it is read from (() in a
    document without pages)."""
    first, end = cand.gold_blocks
    read = [p for p in parts[first:end] if p is not None]
    texts = [p.text for p in read]
    if cand.answer_mark and texts:
        texts[0] = _A_MARK.sub("", texts[0], count=1)
    if not cap:
        return normalize(" ".join(texts)), _pages(read)
    gold, n = "", 0
    for n, t in enumerate(texts, 1):
        gold = normalize(gold + " " + t)
        if len(gold) >= TITLE_GOLD_TARGET:
            break
    if len(gold) > TITLE_GOLD_CAP:
        # Prefer ending on a sentence; else a hard cut.
        cut = gold.rfind("。", 0, TITLE_GOLD_CAP)
        gold = gold[:cut + 1] if cut + 1 >= TITLE_GOLD_TARGET else gold[:TITLE_GOLD_CAP].rstrip()
    return gold, _pages(read[:n])


def _pages(read: list[Part]) -> tuple[int, ...]:
    return tuple(sorted({p.page for p in read} - {0}))


# ---------------------------------------------------------------------------------------
# Candidates of each builder, in document-id order then position.

def _documents(corpus: Corpus) -> list[Document]:
    return sorted(corpus.documents, key=lambda d: d.id)


def _heading_candidates(corpus: Corpus, want) -> list[_Candidate]:
    out = []
    for doc in _documents(corpus):
        n = 0
        for i, b in enumerate(doc.blocks):
            if not b.is_heading:
                continue
            n += 1
            text = clean_title(doc.block_text(b))
            if want(b.level, text):
                out.append(_Candidate(doc.id, f"{doc.id}#h{n}", text, _heading_edit(doc, i),
                                      (i + 1, _section_end(doc, i))))
    return out


def _faq_heading_candidates(corpus: Corpus, removed: Counter) -> list[_Candidate]:
    return _heading_candidates(corpus, lambda level, text: level in (2, 3, 4) and is_question(text))


def _title_candidates(corpus: Corpus, removed: Counter) -> list[_Candidate]:
    # A title found more than once (in any document, any level, or as a document title)
    # points at no one section: neither copy becomes a query.
    seen: Counter[str] = Counter()
    for doc in corpus.documents:
        titles = [clean_title(doc.block_text(b)) for b in doc.blocks if b.is_heading]
        if doc.title and clean_title(doc.title) not in titles:
            titles.append(clean_title(doc.title))
        seen.update(t.casefold() for t in titles)  # "Use Case" and "Use case" are one

    def want(level: int, text: str) -> bool:
        if level not in (2, 3) or is_question(text):
            return False  # not a section title (a question is the faq sets')
        rule = ("only a date, version or number" if only_numbers(text)
                else "generic title" if len(text) < 2 or text.lower() in GENERIC_TITLES
                else "title of several sections" if seen[text.casefold()] > 1 else None)
        removed[rule] += rule is not None
        return rule is None

    return _heading_candidates(corpus, want)


def _qa_candidates(corpus: Corpus, removed: Counter) -> list[_Candidate]:
    out = []
    for doc in _documents(corpus):
        blocks = doc.blocks
        n = 0
        for i, b in enumerate(blocks):
            text = doc.block_text(b)
            if b.kind != "paragraph" or not _Q_MARK.match(text):
                continue
            n += 1
            end = i + 1
            while end < len(blocks) and not blocks[end].is_heading and not (
                    blocks[end].kind == "paragraph" and _Q_MARK.match(doc.block_text(blocks[end]))):
                end += 1
            inline = _A_INLINE.search(text)
            if inline:  # keep the answer part in the view
                question = text[:inline.start()]
                edit, first = _Edit(replace={i: text[inline.start():].strip()}), i
            elif end > i + 1 and blocks[i + 1].kind == "paragraph" and \
                    _A_MARK.match(doc.block_text(blocks[i + 1])):
                question = text
                edit, first = _Edit(drop={i}), i + 1
            else:
                continue
            qtext = normalize(_Q_MARK.sub("", question, count=1))
            if qtext:
                out.append(_Candidate(doc.id, f"{doc.id}#q{n}", qtext, edit, (first, end), True))
    return out


_CANDIDATES = {
    "faq-headings": _faq_heading_candidates,
    "faq-qa": _qa_candidates,
    "section-titles": _title_candidates,
}


def build(corpus: Corpus, name: str, max_queries: int, seed: int) -> QuerySet:
    by_id = {d.id: d for d in corpus.documents}
    removed: Counter[str] = Counter()
    cands = _CANDIDATES[name](corpus, removed)
    found = len(cands) + sum(removed.values())
    cap = name == "section-titles"
    # Questions are cut out wherever they are cited; terse titles occur in prose by nature.
    scrubs = name != "section-titles"

    def edits_of(chosen: list[_Candidate]) -> dict[str, _Edit]:
        edits: dict[str, _Edit] = {}
        for c in chosen:
            edits.setdefault(c.doc_id, _Edit()).add(c.edit)
        return edits

    # The gold must be long enough even when every other candidate is removed around it.
    everything = edits_of(cands)
    scrub = _scrubber(c.text for c in cands) if scrubs else None
    base = {d.id: d.parts() for d in corpus.documents}
    parts = {i: _view_parts(by_id[i], e, scrub, base[i]) for i, e in everything.items()}
    long_enough = [c for c in cands if len(_gold(parts[c.doc_id], c, cap)[0]) >= MIN_GOLD]
    removed[f"answer under {MIN_GOLD} characters"] += len(cands) - len(long_enough)

    # A question asked twice (in two documents, or twice in one) is asked once: the first
    # copy is the query, and removing it removes its copies too, or they would leak it.
    copies: dict[str, list[_Candidate]] = {}
    for c in long_enough:
        copies.setdefault(c.text, []).append(c)
    removed["asked twice"] += len(long_enough) - len(copies)
    chosen = stratified([group[0] for group in copies.values()], max_queries, seed, removed)

    # Golds are read from the view's own parts, so each is a stretch of the view's text.
    edits = edits_of([copy for c in chosen for copy in copies[c.text]])
    scrub = _scrubber(c.text for c in chosen) if scrubs else None
    parts = {d.id: _view_parts(d, edits.get(d.id, _Edit()), scrub, base[d.id])
             for d in corpus.documents}
    golds = [_gold(parts[c.doc_id], c, cap) for c in chosen]
    queries = tuple(Query(c.id, c.text, c.doc_id, gold, pages=pages)
                    for c, (gold, pages) in zip(chosen, golds))
    docs = []
    for d in corpus.documents:
        kept = [p for p in parts[d.id] if p is not None]
        docs.append(d if kept == base[d.id] else Document.from_parts(d.id, d.title, kept, d.source))
    return QuerySet(name, queries, Corpus(corpus.name, tuple(docs), corpus.problems),
                    candidates=found, removed=tuple(sorted(
                        ((k, v) for k, v in removed.items() if v),
                        key=lambda kv: RULES.index(kv[0].split(" (")[0]))))


def sample(items: list, max_queries: int, seed: int) -> list:
    if max_queries < 0:
        raise ValueError(f"max_queries must be >= 0, got {max_queries}")
    if len(items) <= max_queries:
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), max_queries))
    return [items[i] for i in keep]


def stratified(cands: list[_Candidate], max_queries: int, seed: int,
               removed: Counter | None = None) -> list[_Candidate]:
    """At most `max_queries` candidates, drawn evenly from their documents so that no
    document supplies more than DOCUMENT_SHARE of the set (a release-notes page of 170
    headings would otherwise be a fifth of it). With fewer documents than that share allows,
    they are drawn evenly with no share. Kept in document order; seeded."""
    if max_queries < 0:
        raise ValueError(f"max_queries must be >= 0, got {max_queries}")
    by_doc: dict[str, list[_Candidate]] = {}
    for c in cands:
        by_doc.setdefault(c.doc_id, []).append(c)
    counts = sorted(len(v) for v in by_doc.values())
    shared = len(counts) * DOCUMENT_SHARE >= 1

    def most(total: int) -> int:  # the most one document may give to a set of `total`
        return max(1, int(total * DOCUMENT_SHARE)) if shared else total

    total = min(max_queries, len(cands))
    while total and sum(min(n, most(total)) for n in counts) < total:
        total -= 1
    limit = most(total)
    level = 0  # every document gives min(its candidates, level), some one more
    while level < limit and sum(min(n, level + 1) for n in counts) <= total:
        level += 1
    rng = random.Random(seed)
    extra = [d for d in sorted(by_doc) if len(by_doc[d]) > level]
    extra = set(rng.sample(extra, total - sum(min(n, level) for n in counts)))
    out = []
    for d in sorted(by_doc):
        want = min(len(by_doc[d]), level) + (d in extra)
        keep = sorted(rng.sample(range(len(by_doc[d])), want))
        out += [by_doc[d][i] for i in keep]
    if removed is not None:
        over = sum(max(0, n - min(n, limit)) for n in counts)
        removed[f"over one document's share ({DOCUMENT_SHARE:.0%})"] += over if shared else 0
        removed["beyond max_queries"] += len(cands) - len(out) - (over if shared else 0)
    return out


def query_leaks(query_set: QuerySet) -> list[tuple[str, str]]:
    """(query id, document id) for each query whose text is still in the view.

    A question (faq sets, user files) leaks if its text occurs anywhere in a block or in a
    heading path; a section title leaks only as a whole heading or heading-path entry,
    since terse titles occur naturally in prose."""
    leaks = []
    exact = query_set.name == "section-titles"
    for doc in query_set.view.documents:
        # each distinct heading once: every block repeats its path (a page without headings
        # repeats its title, which may be long, in every block)
        paths = {clean_title(h) for h in {h for b in doc.blocks for h in b.headings if h}}
        heads = {clean_title(doc.block_text(b)) for b in doc.blocks if b.is_heading}
        if exact:
            found = paths | heads
            leaks += [(q.id, doc.id) for q in query_set.queries if q.text in found]
            continue
        tokens = doc.text.split()  # split once: the normalized text and its words
        haystack = "\n".join([" ".join(tokens), *sorted(paths)])
        words = set(tokens).union(*(p.split() for p in paths))
        leaks += [(q.id, doc.id) for q in query_set.queries
                  if _may_occur(q.text, words) and q.text in haystack]
    return leaks


def _may_occur(text: str, words: set[str]) -> bool:
    """False when `text` cannot occur in a text whose whitespace-separated words are `words`
    and whose only whitespace is single spaces and newlines: a word of `text` with a space
    on both sides is a whole word there too. Searching a long document for every question
    costs far more than this look-up."""
    inner = text.split(" ")[1:-1]
    if not inner or any(not w or _OTHER_SPACE.search(w) for w in inner):
        return True  # nothing to rule out by
    return all(w in words for w in inner)
