"""Questions from a team's own generator (an LLM behind any API), checked before they count.

The generator is a callable named as MODULE:ATTR, called once per section:

    generator(text: str, section: Section) -> iterable of
        {"question": str, "excerpts": [str, ...]}     (a single str excerpt is accepted too)

`text` is the section's text; `section` tells its document id, title, heading path and
[start, end) offsets in the document text. Each excerpt must be copied from the document:

- excerpts are located in the section asked about (exactly, else with whitespace ignored)
  and written as `spans`; an excerpt not in the section is dropped and counted (a copy
  elsewhere in the document is another passage), and so is a question left with none; an
  excerpt found more than once in the section is placed at its first copy and counted as
  ambiguous;
- a call's answer is read up to MAX_ANSWER_ITEMS questions: an endless iterator is cut
  there, and the section is named in a warning;
- a question that quotes its excerpts is dropped as a leak: a chunk holding the excerpt
  would then be found by the question's own words (`LEAK_SHARE`);
- a question asked twice (compared casefolded, without punctuation or extra spaces) is kept
  once.

Sections are the documents' heading sections (the blocks under a heading, up to the next
heading; a long one cut into pieces of at most MAX_SECTION_CHARS), picked round-robin over
the documents in an order drawn with random.Random(seed), so no long document dominates.
Each answer is cached under the section (its text and heading path) and the generator's
identity (spec, its module's source digest, its optional `version`), so an interrupted run
resumes and a re-run makes no calls; a generator that raises on a section fails that section
only, which is not cached, so the next run asks it again. The cache is bounded by
$CHUNKEVAL_QUESTIONS_MB and, unlike results, kept by `chunkeval cache clear`: its answers
cost calls to make again.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import one_line
from ..model import Corpus, Document
from ..outside import spec_digest
from ..progress import Progress
from ..store import (atomic_write, cache_root, cannot_write, files_by_age, limit_from_env,
                     prune_oldest)
from .excerpts import Locator

MAX_SECTION_CHARS = 4000
DEFAULT_SECTIONS = 50
SEED = 0  # of the section order
# A question is a leak when at least this share of its content words lie in a quote of its
# excerpts (leak_share). Measured in bench/results/question-leaks.md: it flags 9 of Chroma's
# 472 LLM-written questions and 456 of the 458 questions made by copying a stretch of an
# excerpt that have enough words to judge.
LEAK_SHARE = 0.8
# Fewer content words than this say too little to call a copy.
LEAK_MIN_TERMS = 4

# Questions read from one call's answer: a generator returning an endless iterator is cut
# here rather than filling memory.
MAX_ANSWER_ITEMS = 200

CACHE_FORMAT = 1
LIMIT_VAR = "CHUNKEVAL_QUESTIONS_MB"
LIMIT_MB = 256

REASONS = {"not_found": "excerpt not found", "leak": "leak (quotes its excerpt)",
           "duplicate": "duplicate"}


@dataclass(frozen=True)
class Section:
    doc_id: str
    title: str
    headings: tuple[str, ...]  # the heading path in force, title first, empty levels left out
    start: int
    end: int


def sections_of(doc: Document) -> list[Section]:
    """The document's heading sections: a heading and the blocks up to the next heading (the
    blocks before the first heading are one too), each cut at block boundaries into pieces of
    at most MAX_SECTION_CHARS, and a longer block at a space; a heading alone asks nothing."""
    groups: list[list] = []  # per section: (start, end, headings) of its body's stretches
    for b in doc.blocks:
        if b.is_heading or not groups:
            groups.append([])
        if not b.is_heading:
            groups[-1] += [(s, e, b.headings) for s, e in _windows(doc.text, b.start, b.end)]
    # A page's title is its first heading when nothing else names it (a Markdown chapter
    # that starts at "##" has no h1 and no front matter): never the file's name.
    title = doc.title
    if title == doc.id:
        title = next((" ".join(doc.block_text(b).split()) for b in doc.blocks if b.is_heading),
                     title)
    out = []
    for group in groups:
        pieces: list[list] = []
        for stretch in group:
            if not pieces or stretch[1] - pieces[-1][0][0] > MAX_SECTION_CHARS:
                pieces.append([])
            pieces[-1].append(stretch)
        for piece in pieces:
            heads = tuple(h for h in piece[-1][2] if h)
            out.append(Section(doc.id, title, heads, piece[0][0], piece[-1][1]))
    return out


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut into stretches of at most MAX_SECTION_CHARS, at a space where one is."""
    out = []
    while end - start > MAX_SECTION_CHARS:
        cut = text.rfind(" ", start + MAX_SECTION_CHARS // 2, start + MAX_SECTION_CHARS)
        cut = cut if cut > start else start + MAX_SECTION_CHARS
        out.append((start, cut))
        start = cut + 1 if text[cut] == " " else cut
    return out + [(start, end)]


def pick_sections(corpus: Corpus, n: int, seed: int) -> list[Section]:
    """`n` sections, round-robin over the documents: each document's sections in an order
    drawn with the seed, the documents in an order drawn with it too."""
    rng = random.Random(seed)
    queues = []
    for doc in sorted(corpus.documents, key=lambda d: d.id):
        found = sections_of(doc)
        rng.shuffle(found)
        if found:
            queues.append(found)
    rng.shuffle(queues)
    picked: list[Section] = []
    for i in range(max((len(q) for q in queues), default=0)):
        picked += [q[i] for q in queues if i < len(q)]
    return picked[:n]


# -- leaks and duplicates ----------------------------------------------------------------------

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers him his how i if in into is it its itself just
me more most my no nor not now of off on once only or other our out over own same she should
so some such than that the their theirs them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you
your according described describe mention mentioned mentions give given name named list
explain text document passage say said says provided based
""".split())
_TOKEN = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_HIRAGANA = re.compile(r"[\u3040-\u309f]")
# A quote is a run of at least this many words (CJK text, which has no spaces: characters)
# that the excerpt has in the same order.
QUOTE_RUN = 4
QUOTE_RUN_CJK = 8


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        out += list(tok) if _CJK.search(tok) else [tok]
    return out


def _is_content(tok: str) -> bool:
    if _CJK.match(tok):
        return not _HIRAGANA.match(tok)  # kana particles carry no topic
    return tok not in STOPWORDS and (len(tok) > 1 or tok.isdigit())


def leak_share(question: str, excerpts: list[str]) -> float:
    """The share of the question's content words (not stop words; for CJK, characters other
    than kana) that lie in a quote of its excerpts; 0 for a question of fewer than
    LEAK_MIN_TERMS content words. Content words alone would not do: a natural question
    names what its answer names, and most of Chroma's share most of their words with it."""
    q = _tokens(question)
    content = [i for i, t in enumerate(q) if _is_content(t)]
    if len(content) < LEAK_MIN_TERMS:
        return 0.0
    n = QUOTE_RUN_CJK if sum(len(t) == 1 and bool(_CJK.match(t)) for t in q) * 2 > len(q) \
        else QUOTE_RUN
    runs = set()
    for e in excerpts:
        t = _tokens(e)
        runs |= {tuple(t[i:i + n]) for i in range(len(t) - n + 1)}
    quoted = [False] * len(q)
    for i in range(len(q) - n + 1):
        if tuple(q[i:i + n]) in runs:
            quoted[i:i + n] = [True] * n
    return sum(quoted[i] for i in content) / len(content)


def question_key(text: str) -> str:
    return " ".join(_TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()))


# -- the answer cache --------------------------------------------------------------------------

def root() -> Path:
    return cache_root() / "questions"


def _entries():
    return files_by_age(root(), "*/*.json")


def usage() -> tuple[int, int]:
    """(answers, bytes) in the question cache."""
    entries = _entries()
    return len(entries), sum(size for _, _, size in entries)


def limit_bytes() -> int:
    return limit_from_env(LIMIT_VAR, LIMIT_MB)


def _path(key: str) -> Path:
    return root() / key[:2] / f"{key}.json"


def _load(key: str) -> list[dict] | None:
    path = _path(key)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("format") != CACHE_FORMAT \
            or stored.get("key") != key:
        return None
    try:
        answer = checked(stored.get("answer"))
    except ValueError:
        return None  # damaged: asked again
    try:
        os.utime(path)  # used now: kept longest when the cache is pruned
    except OSError:
        pass
    return answer


def _store(key: str, answer: list[dict]) -> None:
    data = json.dumps({"format": CACHE_FORMAT, "key": key, "answer": answer},
                      ensure_ascii=False)
    try:
        atomic_write(_path(key), data)
    except OSError as e:
        cannot_write(e)  # a cache that cannot be written costs calls, not questions


def identity(spec: str, generator: Any) -> dict:
    """What the generator's answers depend on, as far as chunkeval can see."""
    version = getattr(generator, "version", None)
    if version is None:  # a module-level `version` beside the function serves as well
        version = getattr(sys.modules.get(spec.partition(":")[0]), "version", None)
    return {"spec": spec, "source_digest": spec_digest(spec),
            "version": None if version is None else str(version)}


def _key(doc: Document, section: Section, ident: dict) -> str:
    text = doc.text[section.start:section.end]
    blob = json.dumps([CACHE_FORMAT, text, section.headings, ident], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def checked(answer: Any, limit: int | None = None) -> list[dict]:
    """The generator's answer as [{"question": str, "excerpts": [str, ...]}], its first
    `limit` items at most; ValueError saying how it broke the protocol."""
    if isinstance(answer, (str, bytes, dict)) or not hasattr(answer, "__iter__"):
        raise ValueError(f"returned {type(answer).__name__}, not an iterable of "
                         "{'question', 'excerpts'} objects")
    out = []
    for i, item in enumerate(answer):
        if limit is not None and i >= limit:
            break
        q = item.get("question") if isinstance(item, dict) else None
        ex = item.get("excerpts") if isinstance(item, dict) else None
        ex = [ex] if isinstance(ex, str) else ex
        if not isinstance(q, str) or not q.strip() or not isinstance(ex, list) \
                or not all(isinstance(e, str) for e in ex):
            raise ValueError(f"item {i} is not {{'question': str, 'excerpts': [str, ...]}}: "
                             f"{one_line(repr(item), 120)}")
        out.append({"question": q, "excerpts": ex})
    return out


# -- the run -----------------------------------------------------------------------------------

@dataclass
class Generated:
    meta: dict
    lines: list[dict] = field(default_factory=list)
    sections: int = 0
    calls: int = 0
    cached: int = 0
    returned: int = 0
    dropped: Counter = field(default_factory=Counter)
    excerpts_unfound: int = 0
    ambiguous: list[str] = field(default_factory=list)  # excerpts placed at their first copy
    failed: list[str] = field(default_factory=list)  # "section: why", one per failed section
    cut: list[str] = field(default_factory=list)  # sections whose answer was cut at the cap

    def summary(self) -> str:
        out = [f"sections asked     {self.sections} ({self.cached} answered from the cache)",
               f"generator calls    {self.calls}",
               f"sections failed    {len(self.failed)}",
               f"questions returned {self.returned}",
               f"  kept             {len(self.lines)}"]
        out += [f"  dropped, {label:<25} {self.dropped[key]}"
                for key, label in REASONS.items()]
        out.append(f"excerpts not found {self.excerpts_unfound} (in their section)")
        out.append(f"excerpts ambiguous {len(self.ambiguous)} (more than once in their "
                   "section: at the first)")
        return "\n".join(out)


def generate(corpus: Corpus, generator: Callable, spec: str, *, sections: int = DEFAULT_SECTIONS,
             seed: int = SEED, progress: bool | None = None) -> Generated:
    ident = identity(spec, generator)
    picked = pick_sections(corpus, sections, seed)
    meta = {"generator": ident, "seed": seed, "sections": len(picked),
            "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint}
    result = Generated(meta, sections=len(picked))
    locator = Locator(corpus)
    seen: set[str] = set()
    with Progress("asking the question generator", len(picked), enabled=progress) as bar:
        for section in picked:
            doc = corpus[section.doc_id]
            name = f"{section.doc_id} {' > '.join(section.headings[1:])}".rstrip() + \
                f" [{section.start}:{section.end}]"
            key = _key(doc, section, ident)
            answer = _load(key)
            if answer is not None:
                result.cached += 1
            else:
                result.calls += 1
                try:
                    answer = checked(generator(doc.text[section.start:section.end], section),
                                     MAX_ANSWER_ITEMS + 1)
                    if len(answer) > MAX_ANSWER_ITEMS:
                        answer = answer[:MAX_ANSWER_ITEMS]
                        result.cut.append(f"{name}: more than {MAX_ANSWER_ITEMS} questions "
                                          f"returned; the first {MAX_ANSWER_ITEMS} kept")
                except Exception as e:  # the team's code; the run goes on without the section
                    result.failed.append(f"{name}: {one_line(f'{type(e).__name__}: {e}')}")
                    bar.step(section.doc_id)
                    continue
                _store(key, answer)
            for j, item in enumerate(answer, 1):
                result.returned += 1
                _judge(result, locator, doc, section, item, f"{doc.id}@{section.start}#{j}",
                       seen)
            bar.step(section.doc_id)
    limit = limit_bytes()
    if usage()[1] > limit:
        prune_oldest(_entries(), int(limit * 0.9))
    return result


def _judge(result: Generated, locator: Locator, doc: Document, section: Section, item: dict,
           qid: str, seen: set[str]) -> None:
    spans = []
    for text in item["excerpts"]:
        # The excerpt of the section asked about: a copy elsewhere is another passage.
        hit = locator.find(doc, text, within=(section.start, section.end))
        if hit is None:
            result.excerpts_unfound += 1
            continue
        if hit[2] == "ambiguous":
            result.ambiguous.append(f"{qid}: found more than once in its section of {doc.id}; "
                                    f"placed at the first ({hit[0]}): {one_line(repr(text), 60)}")
        if [hit[0], hit[1]] not in spans:
            spans.append([hit[0], hit[1]])
    question = " ".join(item["question"].split())
    if not spans:
        result.dropped["not_found"] += 1
        return
    if leak_share(question, [doc.text[s:e] for s, e in spans]) >= LEAK_SHARE:
        result.dropped["leak"] += 1
        return
    key = question_key(question)
    if key in seen:
        result.dropped["duplicate"] += 1
        return
    seen.add(key)
    result.lines.append({"id": qid, "query": question, "doc": doc.id, "spans": spans})
