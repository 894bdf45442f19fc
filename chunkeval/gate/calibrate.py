"""How far to trust the gate for one strategy: false alarms on harmless changes, and the
smallest real drop it catches.

A *harmless* variant is the strategy's own output with every chunk boundary of a document
moved back by the same random shift (for fixed-length strategies, the same strategy at
another phase). A *degraded* variant is a harmless one whose chunks each lose the last share
of their text. Every variant is evaluated exactly as the plugin evaluates a strategy and
judged by the plugin's verdict function (`verdict.compare`) against the strategy's own
result as the baseline; a variant fails when any gated comparison of the strategy
(retrievers x query sets x gated metrics) regressed.

The per-query series of every variant are kept in the table, so another tolerance can be
judged on the same trials without evaluating them again (`judge`).

The harmless variants also measure the strategy's own noise floor: per comparison, the mean
and spread of the differences they make (`noise_floors`). Recorded into the baseline
(`--record`), it replaces the Bonferroni bootstrap's width with the spread re-chunking really
has (verdict.compare). Judged with the floor, each harmless variant is tested against a
floor measured without it (leave one out), so its false-alarm count is out of sample.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from .. import strategies
from ..checking import Check
from ..errors import ConfigError, InputError
from ..measured import ChunkStats
from ..metrics import COMPARED, STORED, Metric
from ..model import Chunk, Document
from ..progress import Progress
from ..results import DEFAULTS, PerQuery, Result
from ..store import atomic_write
from .baselines import key as baseline_key
from .entry import BaselineEntry, Noise
from .power import queries_needed
from .verdict import Tolerance, compare

# numpy is imported where trials are run and judged: the command line (`chunkeval --help`
# too) imports this module for DROPS.
if TYPE_CHECKING:
    import numpy as np

    from ..evaluate import Evaluation

DROPS = (0.05, 0.1, 0.2, 0.3)
TRIALS = 50  # harmless variants
DROP_TRIALS = 10  # degraded variants per share of DROPS
POWER = 0.8


def _reslice(c: Chunk, doc: Document, start: int, end: int) -> Chunk:
    text = doc.text[start:end]
    index_text = None
    if c.index_text is not None and c.index_text.endswith(c.text):
        index_text = c.index_text[:len(c.index_text) - len(c.text)] + text  # keep a prefix
    return Chunk(c.doc_id, start, end, text, index_text)


def shifted(chunks: Sequence[Chunk], doc: Document, shift: int) -> list[Chunk]:
    """Every inner boundary moved back by `shift` characters; the document's first and last
    offsets stay. Chunks that are not slices of the document (rewritten text, parents) stay
    as they are: only what can be moved without changing the text's kind is moved."""
    if not chunks:
        return []
    lo, hi = min(c.start for c in chunks), max(c.end for c in chunks)
    out = []
    for c in chunks:
        if c.parent is not None or doc.text[c.start:c.end] != c.text:
            out.append(c)
            continue
        start = c.start if c.start == lo else max(lo, c.start - shift)
        end = c.end if c.end == hi else max(lo, c.end - shift)
        if end > start:
            out.append(_reslice(c, doc, start, end))
    return out


def truncated(chunks: Sequence[Chunk], share: float) -> list[Chunk]:
    """Each chunk without the last `share` of its text (at least one character kept)."""
    out = []
    for c in chunks:
        keep = max(1, round(len(c.text) * (1 - share)))
        text = c.text[:keep]
        index_text = None
        if c.index_text is not None and c.index_text.endswith(c.text):
            index_text = c.index_text[:len(c.index_text) - len(c.text)] + text
        out.append(Chunk(c.doc_id, c.start, min(c.end, c.start + keep), text, index_text,
                         c.parent))
    return out


def variant(base: str | strategies.Strategy, shift: int, drop: float = 0.0
            ) -> strategies.Strategy:
    strategy = strategies.get(base) if isinstance(base, str) else base

    def split(doc: Document) -> list[Chunk]:
        chunks = shifted(strategy.split(doc), doc, shift)
        return truncated(chunks, drop) if drop else chunks

    name = f"{strategy.name}~shift{shift}" + (f"~drop{round(drop * 100)}" if drop else "")
    return strategies.Strategy(name, strategy.family, split,
                               {**strategy.params, "shift": shift, "drop": drop},
                               slices=strategy.slices and not drop, checked=False)


def _kept(result: Result) -> dict:
    """What a verdict needs of a result, as the trials document keeps it: its per-query
    series, its cut rate and its chunk statistics."""
    return {"per_query": [q.scored() for q in result.per_query],
            "metrics": {"cut_rate": result.cut_rate.to_json()}, "chunks": result.chunks.to_json()}


def _kept_value(row: dict, metric: Metric):
    value = row.get(metric.series) if metric.optional else row[metric.series]
    return bool(value) if metric.hit else value


def entry_of(kept: dict, complete_at: float, where: str = "the calibration trials"
             ) -> BaselineEntry:
    """The baseline entry a kept result would record (InputError when it is not one)."""
    try:
        rows = [PerQuery("", **{m.series: _kept_value(q, m) for m in STORED})
                for q in kept["per_query"]]
        for i, q in enumerate(rows):
            for name in (m.series for m in STORED if not m.hit):
                v = getattr(q, name)
                if v is not None and not (type(v) in (int, float) and 0 <= v <= 1):
                    raise InputError(where, f"per_query[{i}].{name} is {v!r}, not a number in "
                                            "[0, 1]")
        return BaselineEntry.from_rows(
            rows, complete_at, cut_rate=kept["metrics"]["cut_rate"]["value"],
            chunks=ChunkStats.from_json(kept["chunks"], Check(where, "chunks")), first=False)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(where, f"not a calibration trials document ({type(e).__name__}: {e})"
                         ) from None


def run_trials(evaluation: Evaluation, strategy: str | strategies.Strategy,
               retrievers: Sequence[str], *, trials: int = TRIALS, drops: Iterable[float] = DROPS,
               drop_trials: int = DROP_TRIALS, seed: int = DEFAULTS.seed,
               progress: bool | None = None) -> dict:
    """Evaluate the strategy and its variants; returns the trials document (no verdicts)."""
    import numpy as np

    base = evaluation.strategy(strategy)
    strategy = base.name
    specs = evaluation.query_specs
    lengths = []
    for spec in specs:
        lengths += [len(c.text) for c in evaluation.chunked(strategy, spec).handed]
    # shifts below the typical chunk length keep every chunk (but the first) whole
    longest_shift = max(1, int(np.median(lengths)) - 1) if lengths else 1
    rng = random.Random(seed)
    plan = [(rng.randint(1, longest_shift), 0.0) for _ in range(trials)]
    plan += [(rng.randint(1, longest_shift), d) for d in drops for _ in range(drop_trials)]

    def evaluate(s: strategies.Strategy) -> dict:
        out = {}
        for spec in specs:
            for ret in retrievers:
                # the ~90 throwaway variants would only crowd real results out of the cache
                r = evaluation.result(s, ret, spec, store=s is base)
                out[f"{ret}|{r.query_set}"] = _kept(r)
            evaluation.release(s, spec)
        return out

    doc = {"strategy": strategy, "params": base.params, "retrievers": list(retrievers),
           "complete_at": evaluation.settings.complete_at, "baseline": evaluate(base),
           "trials": []}
    with Progress("calibrating", len(plan), enabled=progress) as bar:
        for shift, drop in plan:
            v = variant(base, shift, drop)  # handed in, never registered
            try:
                doc["trials"].append({"shift": shift, "drop": drop, "results": evaluate(v)})
            finally:
                evaluation.forget(v)
            bar.step(v.name)
    return doc


def read_trials(path: str, strategy: str) -> dict:
    """The trials document an earlier run wrote (calibration-<strategy>-trials.json), checked
    whole: InputError naming the file and what is wrong, never a failure while judging."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(path, f"cannot read the calibration trials: {e}") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("baseline"), dict)
            and isinstance(doc.get("trials"), list) and "complete_at" in doc):
        raise InputError(path, "not a calibration trials document (calibrate writes "
                               "calibration-<strategy>-trials.json)")
    if doc.get("strategy") != strategy:
        raise InputError(path, f"holds the trials of {doc.get('strategy')!r}, not {strategy!r}")
    complete_at = doc["complete_at"]
    if type(complete_at) not in (int, float) or not 0 <= complete_at <= 1:
        raise InputError(path, f"complete_at is {complete_at!r}, not a number in [0, 1]")
    cases = set(doc["baseline"])
    for case, kept in doc["baseline"].items():
        if len(case.split("|")) != 2:
            raise InputError(path, f"baseline {case!r}: not 'retriever|query set'")
        entry_of(kept, complete_at, f"{path}: baseline {case!r}")
    for i, t in enumerate(doc["trials"]):
        ok = (isinstance(t, dict) and type(t.get("drop")) in (int, float)
              and 0 <= t["drop"] < 1 and isinstance(t.get("results"), dict)
              and set(t["results"]) == cases)
        if not ok:
            raise InputError(path, f"trials[{i}] is not a trial of these cases (a drop in "
                                   f"[0, 1) and results for {', '.join(sorted(cases))})")
        for case, kept in t["results"].items():
            entry_of(kept, complete_at, f"{path}: trials[{i}] {case!r}")
    return doc


def _mean_diffs(now: BaselineEntry, entry: BaselineEntry, complete_at: float
                ) -> dict[str, float]:
    """metric -> mean per-query difference of a result against an entry, as compare takes it."""
    new, old = now.series(complete_at), entry.series(complete_at)
    return {m.name: float((new[m.series] - old[m.series]).mean()) for m in COMPARED
            if m.series in new and m.series in old and len(old[m.series])}


def _entries(doc: dict) -> dict[str, BaselineEntry]:
    return {c: entry_of(kept, doc["complete_at"]) for c, kept in doc["baseline"].items()}


def harmless_diffs(doc: dict) -> dict[str, dict[str, np.ndarray]]:
    """Per comparison and metric, the mean differences of the harmless trials (in order)."""
    import numpy as np

    entries = _entries(doc)
    rows = {c: [_mean_diffs(entry_of(t["results"][c], doc["complete_at"]), entries[c],
                            doc["complete_at"])
                for t in doc["trials"] if not t["drop"]] for c in entries}
    return {c: {m: np.array([r[m] for r in rs]) for m in (rs[0] if rs else {})}
            for c, rs in rows.items()}


def noise_floors(diffs: dict[str, dict[str, np.ndarray]], leave_out: int | None = None
                 ) -> dict[str, dict[str, Noise]]:
    """Per comparison and metric, the noise floor of the harmless differences, without trial
    `leave_out`. Empty when fewer than 3 trials remain (no spread to trust)."""
    import numpy as np

    out: dict[str, dict[str, Noise]] = {}
    for c, by_metric in diffs.items():
        for m, d in by_metric.items():
            if leave_out is not None:
                d = np.delete(d, leave_out)
            if len(d) >= 3:
                out.setdefault(c, {})[m] = Noise(round(float(d.mean()), 6),
                                                 round(float(d.std(ddof=1)), 6), int(len(d)))
    return out


def judge(doc: dict, tol: Tolerance, family: int | None = None,
          calibrated: bool = False) -> dict:
    """The table: false-alarm rate over harmless trials, and per drop share and comparison
    the mean drop (points) and the share of trials caught. The family defaults to every
    gated comparison of the trials (as the plugin counts them). `calibrated` judges with the
    noise floor the harmless trials measure (leave one out for the harmless trials)."""
    import numpy as np

    cases = list(doc["baseline"])
    entries = _entries(doc)
    complete_at = doc["complete_at"]
    trials = [(t, {c: entry_of(t["results"][c], complete_at) for c in cases})
              for t in doc["trials"]]
    tol = replace(tol, family=family or len(cases) * len(tol.gated))
    harmless = [t for t in doc["trials"] if not t["drop"]]
    diffs = harmless_diffs(doc) if calibrated else {}

    def with_floor(leave_out: int | None = None) -> dict[str, BaselineEntry]:
        if not calibrated:
            return entries
        floors = noise_floors(diffs, leave_out)
        return {c: replace(e, noise=floors.get(c, {})) for c, e in entries.items()}

    alarms = []
    for i, (t, now) in enumerate((t, now) for t, now in trials if not t["drop"]):
        judged = with_floor(i)
        failed = [f"{c} {v.metric} {v.diff * 100:+.1f}"
                  for c in cases for v in compare(now[c], judged[c], complete_at, tol)
                  if v.status == "regressed"]
        alarms.append(failed)
    entries = with_floor()
    degraded: dict[float, dict] = {}
    failed: dict[float, list[bool]] = {}  # did the strategy fail at all
    for t, now in trials:
        if not t["drop"]:
            continue
        row = degraded.setdefault(t["drop"], {})
        statuses = []
        for c in cases:
            for v in compare(now[c], entries[c], complete_at, tol):
                cell = row.setdefault(f"{c}|{v.metric}", {"diffs": [], "caught": []})
                cell["diffs"].append(v.diff)
                cell["caught"].append(v.status == "regressed")
                statuses.append(v.status)
        failed.setdefault(t["drop"], []).append("regressed" in statuses)
    table = {"strategy": doc["strategy"], "trials": len(harmless),
             "gate": "calibrated" if calibrated else "bootstrap",
             "alpha": tol.alpha, "family": tol.family, "gated": list(tol.gated),
             "min_effect": tol.min_effect, "confidence": tol.confidence,
             "false_alarms": sum(1 for a in alarms if a),
             "false_alarm_rate": (sum(1 for a in alarms if a) / len(harmless)) if harmless else None,
             "alarms": [a for a in alarms if a],
             "drops": {}, "strategy_failed": {str(d): float(np.mean(f)) for d, f in
                                              sorted(failed.items())}}
    for drop, row in sorted(degraded.items()):
        table["drops"][str(drop)] = {
            k: {"mean_drop": -float(np.mean(v["diffs"])), "caught": float(np.mean(v["caught"])),
                "trials": len(v["diffs"])} for k, v in row.items()}
    table["detectable"] = detectable(table)
    return table


def detectable(table: dict) -> dict:
    """Per comparison: the smallest mean drop (points) caught in >= 80% of its trials."""
    out: dict[str, float | None] = {}
    keys = {k for row in table["drops"].values() for k in row}
    for k in sorted(keys):
        caught = [row[k]["mean_drop"] for row in table["drops"].values()
                  if k in row and row[k]["caught"] >= POWER]
        out[k] = min(caught) if caught else None
    return out


def format_table(table: dict) -> str:
    if table.get("gate") == "calibrated":
        how = (f"gate with the noise floor of the harmless variants (each judged against a "
               f"floor measured without it), family-wise level {table['alpha']:.0%} over "
               f"{table['family']} gated comparisons, and a 95% bootstrap; min effect "
               f"{table['min_effect'] * 100:g} points")
    else:
        how = (f"bootstrap gate, family-wise level {table['alpha']:.0%} over {table['family']} "
               f"gated comparisons, each at {table['confidence']:.2%}, min effect "
               f"{table['min_effect'] * 100:g} points")
    lines = [f"calibration of {table['strategy']}: {table['trials']} harmless variants, "
             f"{table['false_alarms']} failed the gate "
             f"({(table['false_alarm_rate'] or 0) * 100:.1f}%; {how})"]
    for a in table["alarms"]:
        lines.append(f"  false alarm: {'; '.join(a)}")
    drops = list(table["drops"])
    head = f"{'retriever|query set|metric':<44}" + "".join(
        f"{'drop ' + str(round(float(d) * 100)) + '%':>16}" for d in drops) + f"{'80% power':>12}"
    lines.append("degraded variants failing the gate: " + ", ".join(
        f"{round(float(d) * 100)}% dropped {f * 100:.0f}%" for d, f in table["strategy_failed"].items()))
    lines += ["", "mean drop in points (share of trials caught); gated metrics only fail",
              head, "-" * len(head)]
    for k, smallest in table["detectable"].items():
        cells = ""
        for d in drops:
            c = table["drops"][d].get(k)
            cells += f"{c['mean_drop'] * 100:>8.1f} ({c['caught'] * 100:>3.0f}%)" if c else " " * 16
        small = f"{smallest * 100:.1f}" if smallest is not None else "-"
        metric = k.rsplit("|", 1)[1]
        mark = "" if metric in table["gated"] else " (reported)"
        lines.append(f"{k + mark:<44}{cells}{small:>12}")
    return "\n".join(lines)



def parse_drops(spelled: str, trials: int) -> list[float]:
    """--drops as shares, checked with --trials: a one-line error for either."""
    try:
        drops = [float(d) for d in spelled.split(",") if d.strip()]
    except ValueError:
        raise ConfigError(f"--drops {spelled!r}: expected comma-separated shares") from None
    if any(not 0 < d < 1 for d in drops) or trials < 1:
        raise ConfigError("--drops must lie in (0, 1) and --trials be >= 1")
    return drops


@dataclass
class Calibration:
    """The trials of one strategy judged both ways, and the noise floors they measure."""
    trials: dict
    tolerance: Tolerance
    tables: dict = field(init=False)
    floors: dict = field(init=False)

    def __post_init__(self) -> None:
        self.tables = {"bootstrap": judge(self.trials, self.tolerance),
                       "calibrated": judge(self.trials, self.tolerance, calibrated=True)}
        self.floors = noise_floors(harmless_diffs(self.trials))

    @property
    def stem(self) -> str:
        return f"calibration-{self.trials['strategy']}"

    def to_text(self) -> str:
        return "\n\n".join(format_table(t) for t in self.tables.values())

    def to_json(self) -> dict:
        return {**self.tables, "tolerance": self.tolerance.to_json(),
                "noise": {c: {m: n.to_json() for m, n in f.items()}
                          for c, f in self.floors.items()}}

    def to_markdown(self) -> str:
        text = self.to_text()
        # a fence longer than any run of backticks in the names within: it cannot end early
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall("`+", text)), default=0))
        return f"{fence}\n{text}\n{fence}\n"

    def write(self, out: Path, with_trials: bool) -> list[Path]:
        """<stem>.json and .md (and with_trials: <stem>-trials.json) into `out`."""
        files = [out / f"{self.stem}.json", out / f"{self.stem}.md"]
        if with_trials:
            files.append(out / f"{self.stem}-trials.json")
            atomic_write(files[2], json.dumps(self.trials, ensure_ascii=False) + "\n")
        atomic_write(files[0], json.dumps(self.to_json(), ensure_ascii=False, indent=1) + "\n")
        atomic_write(files[1], self.to_markdown())
        return files

    def measured(self) -> dict[str, tuple[BaselineEntry, dict]]:
        """Per baseline key, the entry the floor was measured against and the floor."""
        out = {}
        for case, noise in self.floors.items():
            retriever, query_set = case.split("|", 1)
            entry = entry_of(self.trials["baseline"][case], self.trials["complete_at"])
            out[baseline_key(self.trials["strategy"], retriever, query_set)] = (entry, noise)
        return out


__all__ = ["DROPS", "Calibration", "detectable", "entry_of", "format_table", "harmless_diffs", "judge",
           "noise_floors", "parse_drops", "queries_needed", "read_trials", "run_trials", "shifted", "truncated",
           "variant"]
