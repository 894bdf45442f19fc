"""Parent-child: search small children, hand their parents (SPEC section 5).

Each child chunk carries as `parent` the parent-strategy chunk that holds most of its
span (ties go to the earlier parent). Ranking children and handing each parent once is
the evaluator's job, not the splitter's.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import Chunk, Document
from .registry import Strategy


def attach_parents(children: list[Chunk], parents: list[Chunk]) -> list[Chunk]:
    """Both lists in text order; a two-pointer sweep finds each child's best parent."""
    if not parents:
        return children
    out = []
    p = 0
    for child in children:
        # parents that end before this child starts cannot hold any of it, nor of later children
        while p < len(parents) - 1 and parents[p].end <= child.start:
            p += 1
        best, best_overlap = parents[p], -1
        q = p
        while q < len(parents) and parents[q].start < child.end:
            shared = min(child.end, parents[q].end) - max(child.start, parents[q].start)
            if shared > best_overlap:
                best, best_overlap = parents[q], shared
            q += 1
        out.append(replace(child, parent=best))
    return out


def parent_child(child: Strategy, parent: Strategy) -> Strategy:
    def split(doc: Document) -> list[Chunk]:
        return attach_parents(child.split(doc), parent.split(doc))

    name = f"parent-child-{_short(child)}-{_short(parent)}"
    params = {"child": child.name, "parent": parent.name}
    for k in ("size", "overlap"):  # the searched chunks are the children
        if k in child.params:
            params[k] = child.params[k]
    return Strategy(name, "parent-child", split, params, slices=child.slices)


def _short(s: Strategy) -> str:
    # recursive-200 -> r200, structure-800 -> s800
    return s.name.split("-")[0][0] + str(s.params.get("size", ""))
