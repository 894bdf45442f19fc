"""`chunkeval sweep`: which size and overlap, for this corpus and this retriever.

A grid of configurations of one strategy family (sizes x overlaps) is evaluated with the
session's evaluation, every configuration through the result cache (equal chunks: one
result). Per retriever and query set, at the top k (recall_at_k) and under the budget
(budget_recall), the chosen metric first:

- the best configuration by its mean is compared with every other one on the same queries:
  the difference (configuration - best) with one-sided bounds that hold for all the
  comparisons at once (`stats.simultaneous_bounds`, bootstrap max-t, at the configured
  `alpha`). A configuration is *as good as the best* when its lower bound is above -margin
  (`margin`, default the gate's min_effect: 2 points).
- the verdict: "several as good as the best" when some are; a "confirmed winner" when every
  other one is shown worse (its upper bound below 0); else "not enough evidence", with about
  how many queries would tell, and no recommendation.
- the recommendation: of the best and those as good as it, the cheapest: fewest chunks to
  index, then the fewest characters (units of `length`) handed to the LLM per query, then
  the lowest cut rate of tables and code.
- with a holdout share, the queries are split once (seed 0): the best is chosen on the rest
  and compared, and the recommendation judged, on the held-out queries only; a query set
  with fewer than MIN_HOLDOUT held out is left out with that reason (all of them: refused).
- with `against` (the team's current splitter), the recommendation minus it, paired.
- a grid of more than HALVING_FROM configurations (or with halving on) is first narrowed by
  successive halving on nested samples of the queries (`halve`), each rung dropping only the
  configurations it shows worse than its leader by more than the margin; the finalists are
  judged as above on all the queries (or all the held-out ones).

Every number of the verdict recomputes from sweep.json, which holds each configuration's
per-query series.

The modules, lowest first: `points` (the grid and its strategies) and `measure` (evaluating
configurations); `verdict` (the comparison with the best and the recommendation); `halving`;
`result` (the Sweep, as sweep.json holds it, and what to adopt); `runner` (a whole sweep, and
`configure`: the one a session's settings ask for, checked).
The report words and draws a Sweep (report/sweep_text.py, report/sweep_page.py); nothing here
imports the report.
"""

from __future__ import annotations

from .halving import (ETA, FINALISTS, HALVING_FROM, MIN_RUNG, check_size,
                      halve, halving_on, rung_bounds)
from .measure import evaluate
from .points import Point, grid, parse_overlaps, parse_sizes, strategy_of
from .result import (FORMAT, Sweep, adopted_point, adopted_verdict, config_lines, differ_note,
                     factory_call, nothing_to_adopt)
from .runner import Configured, configure, prepare, run
from .verdict import (AS_GOOD, AT_K, DEFAULT_MARGIN, DEFAULT_METRIC, HANDED, IN_BUDGET, JUDGED,
                      METRICS, MIN_HOLDOUT, MIN_QUESTIONS, SEED, UNCLEAR, WINNER, Row, Verdict,
                      compare, handed, handed_per_query, judge, queries_needed, recommend,
                      split_queries)

FILES = ("sweep.json", "sweep.html", "sweep.md")

__all__ = [
    "AS_GOOD", "AT_K", "Configured", "DEFAULT_MARGIN", "DEFAULT_METRIC", "ETA", "FILES",
    "FINALISTS", "FORMAT", "HANDED", "HALVING_FROM", "IN_BUDGET", "JUDGED", "METRICS",
    "MIN_HOLDOUT", "MIN_QUESTIONS", "MIN_RUNG", "SEED", "UNCLEAR", "WINNER", "Point", "Row",
    "Sweep", "Verdict", "adopted_point", "adopted_verdict", "check_size", "compare",
    "config_lines", "configure", "differ_note", "evaluate", "factory_call", "grid", "halve",
    "halving_on", "handed", "handed_per_query", "judge", "nothing_to_adopt", "parse_overlaps",
    "parse_sizes", "prepare", "queries_needed", "recommend", "rung_bounds", "run",
    "split_queries", "strategy_of"]
