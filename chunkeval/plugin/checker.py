"""The checks of one case: what it is compared with (a baseline file or a base revision's
run), the gate's outcomes for it (`chunkeval.gate.outcome.decide`), and the row each test
reports to the controller."""

from __future__ import annotations

import json

import pytest

from .. import problems as reported
from .. import strategies
from ..errors import BaselineError
from ..gate import diffs
from ..gate.baselines import Baseline, Record, check_same_retriever, key
from ..gate.outcome import decide, pair
from ..gate.verdict import family_note
from ..gate.entry import BaselineEntry
from ..session import Case
from .against import Against, baseline_label, documents_changed
from .state import NOT_COMPARED, PROBLEMS, PROPERTY, State, or_fail


class Checker:
    """The `chunkeval` fixture, and what a case item runs: `check_retrieval(case)`,
    `check_cut_rate(case)`."""

    def __init__(self, state: State, node: pytest.Item):
        self.state, self.node = state, node
        self.session = state.session

    def _emit(self, row: dict) -> None:
        self.node.user_properties.append((PROPERTY, json.dumps(row, ensure_ascii=False)))

    def _emit_problems(self) -> None:
        # Once per process: the controller of an xdist run only sees what reports carry.
        if not self.state.problems_sent:
            self.state.problems_sent = True
            self.node.user_properties.append(
                (PROBLEMS, json.dumps([reported.to_json(p) for p in self.session.problems()])))

    def _where(self) -> str:
        c = self.session.corpus
        return f"corpus {c.name!r} ({c.fingerprint})"

    def _not_compared(self, message: str) -> None:
        """Fail this test as one whose comparison could not be made (EXIT_NOT_COMPARED)."""
        self.node.user_properties.append((NOT_COMPARED, "1"))
        pytest.fail(message, pytrace=False)

    def _against(self, qs, case: Case) -> Against:
        """What this case is compared with: the base revision's run, or the baseline file
        (on the questions both have; on a changed corpus, as information when the chunking
        of the unchanged documents is the same, else against the baseline's commit)."""
        session = self.session
        if session.config.base:
            return self._base_side(session.config.base, qs)
        baseline = self.state.baseline
        if not baseline.exists:
            self._not_compared(f"no baseline file at {baseline.path}: run `pytest "
                               "--update-baselines` to record one from this run, then commit "
                               "it, or gate against the base branch with `pytest "
                               "--chunkeval-base REV`")
        from ..scoring import coverage_rule

        corpus = session.corpus_compared
        coverage = coverage_rule(qs, session.settings.coverage)
        baseline.check_measured_alike(corpus, session.settings.to_json(), qs.name, coverage)
        if baseline.data["corpus"].get("fingerprint") != corpus["fingerprint"]:
            return self._changed_corpus(baseline, qs, case)
        recorded = baseline.data["query_sets"].get(qs.name, {}).get("fingerprint")
        if recorded is not None and recorded != qs.fingerprint:
            keys = baseline.query_keys(qs.name)
            if keys is None:  # recorded before questions were kept: the old refusal
                baseline.check_comparable(corpus, session.settings.to_json(), qs.name,
                                          qs.fingerprint, coverage)
            return Against(baseline, baseline_label(baseline),
                           paired=pair([q.key for q in qs.queries], keys))
        return Against(baseline, baseline_label(baseline))

    def _changed_corpus(self, baseline: Baseline, qs, case: Case) -> Against:
        session = self.session
        then, view_then = baseline.data.get("documents"), baseline.view_documents(qs.name)
        entry = next((e for r in baseline.retrievers(case.strategy, qs.name)
                      if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
        if entry is None and then is not None:  # a strategy new since the baseline: the
            return Against(baseline, baseline_label(baseline))  # case says it has no entry
        if then is None or view_then is None or entry is None or entry.documents is None:
            # recorded before documents were fingerprinted: the old refusal
            baseline.check_comparable(session.corpus_record, session.settings.to_json(),
                                      qs.name, qs.fingerprint)
        changed, total, how = documents_changed(then, session.corpus.document_fingerprints)
        view_now = qs.view.document_fingerprints
        kept = [d for d, f in view_now.items() if view_then.get(d) == f]
        now = self.state.document_hashes(case.strategy, case.query_set)
        if all(entry.documents.get(d) == now.get(d) for d in kept):
            return Against(baseline, baseline_label(baseline), info=(
                f"corpus changed in {changed} of {total} documents ({how}); chunking unchanged "
                f"on the other {total - changed}"))
        from ..gate.base import committed_with, has_commit

        commit = committed_with(baseline.path) or baseline.commit
        if commit and has_commit(session.config.root, commit):
            return self._base_side(commit, qs, f"the baseline's commit {commit[:7]}")
        why = (f"its commit {commit[:7]} is not in this repository" if commit
               else "the baseline records no commit to measure that code at")
        self._not_compared(
            f"{baseline.path}: the corpus changed in {changed} of {total} documents and "
            f"strategy {case.strategy!r} now chunks the unchanged ones differently, so the "
            f"recorded numbers are not comparable, and {why}: gate against the base branch "
            "with `pytest --chunkeval-base REV` (e.g. origin/main), or re-baseline with "
            "`pytest --update-baselines`")
        raise AssertionError  # not reached: _not_compared fails the test

    def _base_side(self, revision: str, qs, label: str | None = None) -> Against:
        side = self.state.start_base(revision).side()
        keys = side.baseline.query_keys(qs.name)
        recorded = side.baseline.data["query_sets"].get(qs.name, {}).get("fingerprint")
        paired = (pair([q.key for q in qs.queries], keys)
                  if keys is not None and recorded != qs.fingerprint else None)
        return Against(side.baseline, label or side.label, paired, failed=side.failed,
                       base=side.strategies, same=side.same)

    def check_retrieval(self, case: Case) -> None:
        or_fail(lambda: self._check_retrieval(case), self.node)

    def _check_retrieval(self, case: Case) -> None:
        session = self.session
        ev = session.evaluation
        qs = session.query_set(case.query_set)
        self._emit_problems()
        result = ev.result(case.strategy, case.retriever, case.query_set)
        corpus = session.corpus_compared
        row = {"strategy": case.strategy, "retriever": case.retriever, "query_set": qs.name,
               "corpus": {k: corpus[k] for k in ("name", "fingerprint")},
               "metrics": {m: v.value for m, v in result.metrics.items()}
               | {"cut_rate": result.cut_rate.value}}
        if session.config.html:  # the per-query page's data, travelling with the row
            from ..report import queries_page

            row["retrieved"] = queries_page.retrieved(result, qs.view, ev.settings.k)
        if self.state.update:
            from ..scoring import coverage_rule

            params = strategies.get(case.strategy).describe()["params"]
            entry = BaselineEntry.from_result(result, ev.settings.complete_at, params)
            entry.documents = self.state.document_hashes(case.strategy, case.query_set)
            corpus = session.corpus_record | {
                "document_fingerprints": session.corpus.document_fingerprints}
            row["record"] = {"path": str(session.baseline_path), **Record(
                case.strategy, case.retriever, qs.name, entry, corpus, ev.settings.to_json(),
                qs.fingerprint, coverage_rule(qs, ev.settings.coverage),
                [q.key for q in qs.queries], qs.view.document_fingerprints,
                self.state.head).to_json()}
            self._emit(row)
            return
        against = self._against(qs, case)
        row |= against.describe(len(session.corpus), len(qs)) | {"whose": self.state.whose}
        what = f"strategy {case.strategy!r}, retriever {case.retriever!r}, query set {qs.name!r}"
        if case.strategy in against.failed:
            self._not_compared(f"{what}: at {against.label} it failed, so there is nothing to "
                               f"compare with: {against.failed[case.strategy]}")
        baseline = against.baseline
        entry = baseline.entry(case.strategy, case.retriever, qs.name)
        if entry is None and key(case.strategy, case.retriever, qs.name) in against.same:
            entry = BaselineEntry.from_result(result, ev.settings.complete_at)
        if entry is None and against.base is not None:
            self._emit(row | {"new": True})  # new on this side: reported, not gated
            return
        if entry is None:
            self._not_compared(f"no baseline entry for {what} in {baseline.path}: run `pytest "
                               "--update-baselines` to record it, then commit the file (or "
                               "gate against the base branch with `pytest --chunkeval-base "
                               "REV`, which reports a new strategy as new)")
        try:  # a base revision's retriever may differ: that is what is gated then
            if against.base is None:
                check_same_retriever(result, entry, str(baseline.path))
        except BaselineError as e:
            raise BaselineError(f"{what}: {e}") from None
        if against.info:  # the corpus changed, the chunking did not: information only
            self._emit(row | {"info": against.info, "recorded": entry.metrics})
            return
        power = session.power(case.query_set)
        if not power.gates:  # measured and shown, but passing it would say nothing
            self._emit(row | {"not_gated": power.reason()})
            # shown at the item, not at this line of the plugin
            raise pytest.skip.Exception(power.reason(), _use_item_location=True)
        try:
            outcomes = decide(result, entry, ev.settings.complete_at,
                              session.tolerance_for(case.strategy), against.paired)
        except BaselineError as e:
            raise BaselineError(f"{what}: the entry in {baseline.path} does not match this "
                                f"run ({e}); re-record it with `pytest --update-baselines`"
                                ) from None
        verdicts = [o.verdict for o in outcomes]
        queries = diffs.per_query(*against.paired_view(result, entry, qs))
        row["verdicts"] = [o.to_json() for o in outcomes]
        row["per_query"] = queries
        if entry.chunks_hash and entry.chunks_hash != result.chunks.hash:
            row["chunks_changed"] = {"params": entry.params,
                                     "now": strategies.get(case.strategy).describe()["params"]}
        self._emit(row)
        for v in verdicts:  # for --junitxml: the numbers, where a CI report reads them
            self.node.user_properties += [
                (v.metric, round(v.value, 6)), (f"{v.metric}_baseline", round(v.baseline, 6)),
                (f"{v.metric}_diff", round(v.diff, 6)), (f"{v.metric}_status", v.status)]
        bad = [v for v in verdicts if v.status == "regressed"]
        if bad:
            lines = "\n  ".join(v.describe() for v in bad)
            note = family_note((v.confidence for v in bad), session.config.alpha)
            versus = f" against {against.label}" if against.base is not None else ""
            pytest.fail(f"{what} regressed{versus} on {self._where()}:\n  {lines}\n"
                        + (f"  ({note})\n" if note else "")
                        + diffs.describe(queries, qs.view), pytrace=False)

    def check_cut_rate(self, case: Case) -> None:
        or_fail(lambda: self._check_cut_rate(case), self.node)

    def _check_cut_rate(self, case: Case) -> None:
        session = self.session
        qs = session.query_set(case.query_set)
        self._emit_problems()
        chunked = session.evaluation.chunked(case.strategy, case.query_set)
        cut = chunked.cut
        what = f"strategy {case.strategy!r} on query set {qs.name!r}"
        problems = []
        ceiling = session.tolerance.cut_ceiling
        if cut.value > ceiling:
            problems.append(f"cut rate {cut.value * 100:.1f}% is above the ceiling "
                            f"{ceiling * 100:.1f}% ({cut.cut} of {cut.blocks} table/pre "
                            "blocks cut)")
        if not self.state.update:
            against = self._against(qs, case)
            baseline = against.baseline
            if case.strategy in against.failed:
                self._not_compared(f"{what}: at {against.label} it failed, so there is "
                                   f"nothing to compare with: {against.failed[case.strategy]}")
            # The cut rate does not depend on the retriever: any recorded one holds it.
            entry = next((e for r in baseline.retrievers(case.strategy, qs.name)
                          if (e := baseline.entry(case.strategy, r, qs.name)) is not None), None)
            if entry is None and against.base is None:
                self._not_compared(f"no baseline entry for {what} in {baseline.path}: run "
                                   "`pytest --update-baselines`")
            if (entry is not None and not against.info
                    and cut.value > entry.cut_rate + session.tolerance.cut_slack):
                versus = (f"{against.label}'s" if against.base is not None else "baseline")
                problems.append(f"cut rate {cut.value * 100:.1f}% rose from {versus} "
                                f"{entry.cut_rate * 100:.1f}%")
        if problems:
            from ..scoring import cut_blocks

            cuts = diffs.describe_cuts(cut_blocks(qs.view.documents, chunked.handed))
            pytest.fail(f"{what} on {self._where()}: " + "; ".join(problems) + "\n" + cuts,
                        pytrace=False)
