"""What a session's corpus and query sets are made of, and what each set's gate can see: the
facts `chunkeval corpus info` and `queries info` show, as objects that render themselves as
JSON or text."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .corpus import format_of
from .corpus.rendered import RULES
from .model import digest
from .problems import summary as problem_summary, to_json as problem_json

if TYPE_CHECKING:
    from .errors import Problem
    from .session import Session


@dataclass
class QuerySetInfo:
    name: str
    facts: dict

    @classmethod
    def of(cls, session: Session, spec: str) -> QuerySetInfo:
        qs = session.query_set(spec)
        per_doc = Counter(q.doc_id for q in qs.queries)
        power = session.power(spec)
        top = per_doc.most_common(1)
        return cls(qs.name, {
            "queries": len(qs), "documents": len(per_doc),
            "largest_share": ({"document": top[0][0], "share": round(top[0][1] / len(qs), 4)}
                              if top else None),
            "candidates": qs.candidates or None, "removed": dict(qs.removed),
            "skipped_lines": len(qs.problems), "gate": power.to_json(),
            "not_gated": power.reason() or None})

    def to_json(self) -> dict:
        return self.facts

    def to_text(self, indent: str = "") -> str:
        d = self.facts
        share = d["largest_share"]
        lines = [f"{indent}{self.name}: {d['queries']:,} queries from {d['documents']} documents"
                 + (f" (largest share {share['share']:.0%}, {share['document']})" if share else "")]
        if d["candidates"]:
            removed = ", ".join(f"{n:,} {rule}" for rule, n in d["removed"].items()) or "none"
            lines.append(f"{indent}  {d['candidates']:,} candidates; removed: {removed}")
        if d["skipped_lines"]:
            lines.append(f"{indent}  {d['skipped_lines']} line(s) of the file skipped (warnings)")
        gate = d["gate"]
        if d["not_gated"]:
            lines.append(f"{indent}  NOT GATED: {d['not_gated']}")
        else:
            lines.append(f"{indent}  gates: catches a drop of {gate['smallest_drop'] * 100:.1f} "
                         f"points 4 times in 5 (coverage spread {gate['sd'] * 100:.0f} points, "
                         f"{'measured on its baseline' if gate['measured'] else 'assumed'})")
        return "\n".join(lines)


@dataclass
class CorpusInfo:
    facts: dict
    sets: list[QuerySetInfo]
    problems: list[Problem]

    @classmethod
    def of(cls, session: Session) -> CorpusInfo:
        corpus, evaluation = session.corpus, session.evaluation
        sets = {spec: evaluation.query_set(spec) for spec in evaluation.query_specs}
        blocks = Counter(b.kind for d in corpus.documents for b in d.blocks)
        problems = session.problems()
        set_infos = [QuerySetInfo.of(session, spec) for spec in sets]
        facts = {
            "name": corpus.name,
            "fingerprint": digest([corpus.fingerprint,
                                   *[qs.fingerprint for qs in sets.values()]])[:16],
            "corpus_fingerprint": corpus.fingerprint,
            "documents": len(corpus),
            "formats": dict(sorted(Counter(format_of(d.id) or "html"
                                           for d in corpus.documents).items())),
            "chars": corpus.chars,
            "blocks": dict(sorted(blocks.items())),
            "removed": removed(corpus),
            "analyzer": {"setting": session.config.analyzer, "resolved": evaluation.analyzer},
            "queries": {qs.name: len(qs) for qs in sets.values()},
            "query_fingerprints": {qs.name: qs.fingerprint for qs in sets.values()},
            "query_sets": {s.name: s.to_json() for s in set_infos},
            "problems": [str(p) for p in problems],
            "problem_details": [problem_json(p) for p in problems],
            "warnings": problem_summary(problems),
        }
        if corpus.paged:  # PDF: how many pages, and that every block of those documents has one
            paged = [d for d in corpus.documents if d.paged]
            facts["pages"] = {"documents": len(paged),
                              "pages": sum(max(b.page for b in d.blocks) for d in paged),
                              "blocks": sum(len(d.blocks) for d in paged),
                              "blocks_with_page": sum(1 for d in paged for b in d.blocks
                                                      if b.page)}
        return cls(facts, set_infos, problems)

    def to_json(self) -> dict:
        return self.facts

    def to_text(self) -> str:
        info = self.facts
        lines = [f"corpus      {info['name']} ({info['documents']} documents, "
                 f"{info['chars']:,} non-space chars)",
                 f"fingerprint {info['fingerprint']} (corpus {info['corpus_fingerprint']})",
                 "blocks      " + ", ".join(f"{k} {v}" for k, v in info["blocks"].items()),
                 "formats     " + ", ".join(f"{k} {v}" for k, v in info["formats"].items())]
        if "pages" in info:
            p = info["pages"]
            lines.append(f"pages       {p['pages']:,} in {p['documents']} documents; "
                         f"{p['blocks_with_page']:,} of their {p['blocks']:,} blocks have a page")
        for kind, rules in info["removed"].items():
            lines.append(f"removed     from {kind}, what a reader does not see:")
            for rule, r in rules.items():
                lines.append(f"  {RULES[rule]}: {r['chars']:,} chars in {r['documents']} "
                             f"document{'s' if r['documents'] != 1 else ''}")
        analyzer = info["analyzer"]
        lines.append(f"analyzer    {analyzer['resolved']}" + (
            " (auto: from the corpus's language)" if analyzer["setting"] == "auto" else ""))
        lines.append("queries     " + ", ".join(f"{k} {v}" for k, v in info["queries"].items()))
        # one per name, as in the JSON
        lines += [s.to_text(indent="  ") for s in {s.name: s for s in self.sets}.values()]
        if info["formats"].get("text"):
            lines.append("note        text files have no headings: section-titles finds no "
                         "queries in them")
        return "\n".join(lines)


def removed(corpus) -> dict:
    """Per file kind and rule, the characters the parser cut and the documents it cut them
    from (a Markdown file's comments, tags, markers...)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for d in corpus.documents:
        for rule, n in d.removed:
            r = out.setdefault(format_of(d.id) or "html", {}).setdefault(
                rule, {"chars": 0, "documents": 0})
            r["chars"] += n
            r["documents"] += 1
    return {kind: {rule: rules[rule] for rule in RULES if rule in rules}
            for kind, rules in sorted(out.items())}


def dump(session: Session) -> str:
    """Every document (text and blocks) and query, one JSON a line: what `export` reads."""
    corpus, evaluation = session.corpus, session.evaluation
    sets = [evaluation.query_set(spec) for spec in evaluation.query_specs]
    lines = [json.dumps({"type": "document", **d.to_json()}, ensure_ascii=False)
             for d in corpus.documents]
    # results.json's spans point into each query set's view (its questions removed)
    lines += [json.dumps({"type": "document", "set": qs.name, **d.to_json()},
                         ensure_ascii=False)
              for qs in sets for d in qs.view.documents]
    lines += [json.dumps({"type": "query", "id": q.id, "set": qs.name, "query": q.text,
                          "doc": q.doc_id, **q.gold_json()}, ensure_ascii=False)
              for qs in sets for q in qs.queries]
    return "\n".join(lines) + "\n"
