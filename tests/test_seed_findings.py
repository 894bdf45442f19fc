"""The seed's robust findings, checked on the default corpus (deterministic or clearly
outside the noise there; the report covers the rest, agreeing or not)."""

import pytest

from chunkeval.report.findings import findings

pytestmark = pytest.mark.corpus

NAMES = ["fixed-200", "fixed-400", "fixed-800", "fixed-1600", "fixed-400-ov200",
         "recursive-400-ov40", "structure-800"]


@pytest.fixture(scope="module")
def by_name(evaluation):
    spec = "section-titles"
    results = [evaluation.result(name, "bm25", spec) for name in NAMES]
    return {f.name: f for f in findings(evaluation.document(results, NAMES), spec)}


@pytest.mark.parametrize("name", ["budget-reverses-order", "structure-cuts-fewer",
                                  "overlap-doubles-chunks", "recursive-zero-overlap"])
def test_seed_finding_holds(by_name, name):
    assert by_name[name].holds, by_name[name].summary
