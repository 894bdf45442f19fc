"""The other side of a case's comparison, and how a changed corpus is described."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..gate.baselines import Baseline
from ..gate.outcome import Paired


@dataclass
class Against:
    """The other side of a case's comparison, as the checks use it and the outputs name it."""

    baseline: Baseline  # its entries: a baseline file's, or a base revision's run
    label: str  # "baselines/docs.json", "main at 1a2b3c4", "the baseline's commit 1a2b3c4"
    paired: Paired | None = None  # the questions both sides have, when they differ
    info: str | None = None  # corpus changed, chunking not: numbers shown, not judged
    failed: dict[str, str] = field(default_factory=dict)  # at the base: strategy -> error
    base: list[str] | None = None  # a base revision's strategies (None: a baseline file)
    same: set[str] = field(default_factory=set)  # cases whose base result is this side's

    def describe(self, documents: int, questions: int) -> dict:
        """What a row says about the comparison (compared_line reads it)."""
        out = {"against": self.label, "documents": documents, "questions": questions}
        if self.base is not None:
            out["base_strategies"] = self.base
        if self.paired is not None and self.paired.partial:
            out["paired"] = self.paired.describe()
        return out

    def paired_view(self, result, entry, qs):
        """The result, entry and query set on the questions both sides have."""
        if self.paired is None or not self.paired.partial:
            return result, entry, qs
        from ..gate.outcome import subset_entry, subset_result

        return (subset_result(result, self.paired.now), subset_entry(entry, self.paired.other),
                replace(qs, queries=tuple(qs.queries[i] for i in self.paired.now)))


def baseline_label(baseline: Baseline) -> str:
    """A baseline file as the summaries name it: relative to the working directory."""
    try:
        return f"baseline {baseline.path.resolve().relative_to(Path.cwd())}"
    except ValueError:
        return f"baseline {baseline.path}"


def documents_changed(then: dict[str, str], now: dict[str, str]) -> tuple[int, int, str]:
    """How many documents were added, removed or edited, of how many in all, and how."""
    names = then.keys() | now.keys()
    count = Counter("added" if d not in then else "removed" if d not in now else "edited"
                    for d in names if then.get(d) != now.get(d))
    how = ", ".join(f"{count[k]} {k}" for k in ("edited", "added", "removed") if count[k])
    return sum(count.values()), len(names), how
