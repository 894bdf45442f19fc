"""`chunkeval corpus fetch|info`: download a built-in corpus, and say what the parser and the
query builders saw."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from ..cache import atomic_write
from ..corpus import fetch_builtin, format_of
from ..corpus.rendered import RULES
from ..errors import CorpusError
from ..model import digest
from ..problems import summary as problem_summary, to_json as problem_json
from ..session import Session
from .common import report_problems, session_of


def corpus_command(args) -> int:
    if args.corpus_command == "fetch":
        try:
            paths = fetch_builtin(args.corpus, progress=None)
        except CorpusError as e:
            if not args.apt_update:
                raise
            # A fresh machine's package lists may be empty or stale: refresh them once.
            print(f"chunkeval: {e}\nchunkeval: running `apt-get update` and trying again",
                  file=sys.stderr)
            _apt_update()
            paths = fetch_builtin(args.corpus, progress=None)
        for p in paths:
            print(p)
        return 0
    return _info(args)


def _apt_update() -> None:
    try:
        done = subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise CorpusError("apt-get is not installed: the default corpus needs Debian's apt; "
                          "or evaluate your own documents with --corpus DIR") from None
    if done.returncode != 0:
        raise CorpusError(f"`apt-get update` failed (exit {done.returncode}): "
                          f"{done.stderr.strip()[-500:]}")



def _info(args) -> int:
    session = session_of(args, check=False)
    corpus, evaluation = session.corpus, session.evaluation
    sets = {spec: evaluation.query_set(spec) for spec in evaluation.query_specs}
    blocks = Counter(b.kind for d in corpus.documents for b in d.blocks)
    problems = session.problems()
    info = {
        "name": corpus.name,
        "fingerprint": digest([corpus.fingerprint, *[qs.fingerprint for qs in sets.values()]])[:16],
        "corpus_fingerprint": corpus.fingerprint,
        "documents": len(corpus),
        "formats": dict(sorted(Counter(format_of(d.id) or "html" for d in corpus.documents).items())),
        "chars": corpus.chars,
        "blocks": dict(sorted(blocks.items())),
        "removed": _removed(corpus),
        "analyzer": {"setting": session.config.analyzer, "resolved": evaluation.analyzer},
        "queries": {qs.name: len(qs) for qs in sets.values()},
        "query_fingerprints": {qs.name: qs.fingerprint for qs in sets.values()},
        "query_sets": {qs.name: set_info(session, spec) for spec, qs in sets.items()},
        "problems": [str(p) for p in problems],
        "problem_details": [problem_json(p) for p in problems],
        "warnings": problem_summary(problems),
    }
    if corpus.paged:  # PDF: how many pages, and that every block of those documents has one
        paged = [d for d in corpus.documents if d.paged]
        info["pages"] = {"documents": len(paged),
                         "pages": sum(max(b.page for b in d.blocks) for d in paged),
                         "blocks": sum(len(d.blocks) for d in paged),
                         "blocks_with_page": sum(1 for d in paged for b in d.blocks if b.page)}
    if args.dump:
        lines = [json.dumps({"type": "document", **d.to_json()}, ensure_ascii=False)
                 for d in corpus.documents]
        # results.json's spans point into each query set's view (its questions removed)
        lines += [json.dumps({"type": "document", "set": qs.name, **d.to_json()},
                             ensure_ascii=False)
                  for qs in sets.values() for d in qs.view.documents]
        lines += [json.dumps({"type": "query", "id": q.id, "set": qs.name, "query": q.text,
                              "doc": q.doc_id, **q.gold_json()}, ensure_ascii=False)
                  for qs in sets.values() for q in qs.queries]
        atomic_write(args.dump, "\n".join(lines) + "\n")
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
    else:
        print(f"corpus      {info['name']} ({info['documents']} documents, "
              f"{info['chars']:,} non-space chars)")
        print(f"fingerprint {info['fingerprint']} (corpus {info['corpus_fingerprint']})")
        print("blocks      " + ", ".join(f"{k} {v}" for k, v in info["blocks"].items()))
        print("formats     " + ", ".join(f"{k} {v}" for k, v in info["formats"].items()))
        if "pages" in info:
            p = info["pages"]
            print(f"pages       {p['pages']:,} in {p['documents']} documents; "
                  f"{p['blocks_with_page']:,} of their {p['blocks']:,} blocks have a page")
        for kind, rules in info["removed"].items():
            print(f"removed     from {kind}, what a reader does not see:")
            for rule, r in rules.items():
                print(f"  {RULES[rule]}: {r['chars']:,} chars in {r['documents']} "
                      f"document{'s' if r['documents'] != 1 else ''}")
        analyzer = info["analyzer"]
        print(f"analyzer    {analyzer['resolved']}" + (
            " (auto: from the corpus's language)" if analyzer["setting"] == "auto" else ""))
        print("queries     " + ", ".join(f"{k} {v}" for k, v in info["queries"].items()))
        for name, detail in info["query_sets"].items():
            print(format_set_info(name, detail, indent="  "))
        if info["formats"].get("text"):
            print("note        text files have no headings: section-titles finds no queries "
                  "in them")
        if args.dump:
            print(f"dump        {args.dump}")
    return report_problems(problems, session.config.strict)


def _removed(corpus) -> dict:
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


def set_info(session: Session, spec: str) -> dict:
    """What a query set is made of and what its gate can see (corpus info, queries info)."""
    qs = session.query_set(spec)
    per_doc = Counter(q.doc_id for q in qs.queries)
    power = session.power(spec)
    top = per_doc.most_common(1)
    return {"queries": len(qs), "documents": len(per_doc),
            "largest_share": ({"document": top[0][0], "share": round(top[0][1] / len(qs), 4)}
                              if top else None),
            "candidates": qs.candidates or None, "removed": dict(qs.removed),
            "skipped_lines": len(qs.problems), "gate": power.to_json(),
            "not_gated": power.reason() or None}


def format_set_info(name: str, d: dict, indent: str = "") -> str:
    share = d["largest_share"]
    lines = [f"{indent}{name}: {d['queries']:,} queries from {d['documents']} documents"
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
