"""Page metrics of a view with pages (PDF): page hit@k and pages in budget (see the package
notes)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..model import Chunk, QuerySet
from ..outside import Length
from .scores import Scores, _taken_within


def _score_pages(out: Scores, query_set: QuerySet, handed: Sequence[Chunk], ranking: np.ndarray,
                 *, k: int, budget: int, length: Length) -> None:
    """page hit@k and pages in budget (see the module notes) of a view with pages."""
    docs = {d.id: d for d in query_set.view.documents}
    n = len(query_set.queries)
    out.page_hit = np.full(n, np.nan)
    out.budget_pages = np.zeros(n)
    pages: dict[int, tuple[int, ...]] = {}
    lengths: dict[int, int] = {}

    def pages_of(i: int) -> tuple[int, ...]:
        if i not in pages:
            c = handed[i]
            doc = docs.get(c.doc_id)
            pages[i] = doc.pages_of(c.start, c.end) if doc is not None else ()
        return pages[i]

    def length_of(i: int) -> int:
        if i not in lengths:
            lengths[i] = length(handed[i].text)
        return lengths[i]

    for qi, q in enumerate(query_set.queries):
        row = [int(i) for i in ranking[qi] if i >= 0]
        taken = _taken_within((length_of(i) for i in row), budget)  # stops at the budget
        out.budget_pages[qi] = len({(handed[i].doc_id, p) for i in row[:taken]
                                    for p in pages_of(i)})
        if q.pages:
            gold = set(q.pages)
            out.page_hit[qi] = any(handed[i].doc_id == q.doc_id and gold.intersection(pages_of(i))
                                   for i in row[:k])
