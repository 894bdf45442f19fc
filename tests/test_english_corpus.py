"""The built-in English corpus `debian-en` next to `debian-ja`: its shape, its analyzer, and
a few reference strategies x bm25 and use gated against baselines/debian-en.json.

`pytest --update-baselines` records that file from this real run, as it does for the
default corpus. Needs apt-get the first time (then the cache answers).
"""

from collections import Counter
from pathlib import Path

import pytest

from chunkeval import retrieval
from chunkeval.corpus import load_corpus
from chunkeval.corpus.debian import DEBIAN_EN
from chunkeval.errors import BaselineError
from chunkeval.evaluate import Evaluation, corpus_summary
from chunkeval.gate.baselines import Baseline, Record, check_same_retriever, update_file
from chunkeval.gate.verdict import Tolerance, compare
from chunkeval.gate.entry import BaselineEntry

pytestmark = pytest.mark.corpus

STRATEGIES = ("fixed-400", "structure-400")
RETRIEVERS = ("bm25", "use")
QUERY_SETS = ("faq-headings", "section-titles")
BASELINE = Path(__file__).resolve().parents[1] / "baselines" / "debian-en.json"


@pytest.fixture(scope="module")
def debian_en():
    return load_corpus("debian-en")


@pytest.fixture(scope="module")
def english(debian_en, request):
    """The evaluation, the baseline, and under --update-baselines the records this process
    made, merged into the file at the end under its lock (with -n, each worker has its own)."""
    ev = Evaluation(debian_en, query_specs=list(QUERY_SETS))
    baseline = Baseline.load(BASELINE)
    update = request.config.getoption("update_baselines", False)
    records: list[Record] = []
    yield ev, baseline, records if update else None
    if records:
        update_file(BASELINE, records)


def test_shape(debian_en):
    assert 45 <= len(debian_en) <= 52 and debian_en.problems == ()
    assert 800_000 <= debian_en.chars <= 1_000_000
    packages = Counter(d.id.split("/")[0] for d in debian_en.documents)
    assert set(packages) == {pkg.name for pkg in DEBIAN_EN}
    assert packages["debian-faq"] == 16  # the same chapters as debian-faq-ja
    assert not any(d.id.endswith(("index.en.html", "search.html", "developers-reference.html"))
                   for d in debian_en.documents)


def test_english_gets_words_and_the_faq_its_questions(english):
    ev, _, _ = english
    assert ev.analyzer == "word+stem"
    faq = ev.query_set("faq-headings")
    assert len(faq) >= 100 and all("?" in q.text for q in faq.queries)


@pytest.mark.parametrize("query_set", QUERY_SETS)
@pytest.mark.parametrize("retriever", RETRIEVERS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_recall(english, strategy, retriever, query_set):
    ev, baseline, records = english
    if retriever not in retrieval.names():
        pytest.fail(f"retriever {retriever!r} is not installed: pip install 'chunkeval[use]'")
    qs = ev.query_set(query_set)
    result = ev.result(strategy, retriever, query_set)
    if records is not None:
        entry = BaselineEntry.from_result(result, ev.settings.complete_at)
        records.append(Record(strategy, retriever, qs.name, entry,
                              corpus_summary(ev.corpus).to_json(), ev.settings.to_json(),
                              qs.fingerprint))
        return
    what = f"debian-en {strategy} {retriever} {query_set}"
    entry = baseline.entry(strategy, retriever, qs.name)
    if entry is None:
        pytest.fail(f"no baseline entry for {what} in {BASELINE}: run `pytest "
                    "--update-baselines`", pytrace=False)
    try:
        baseline.check_comparable(corpus_summary(ev.corpus).to_json(), ev.settings.to_json(),
                                  qs.name, qs.fingerprint)
        check_same_retriever(result, entry, str(BASELINE))
    except BaselineError as e:
        pytest.fail(str(e), pytrace=False)
    bad = [v for v in compare(result, entry, ev.settings.complete_at, Tolerance())
           if v.status == "regressed"]
    assert not bad, f"{what} regressed: " + "; ".join(v.describe() for v in bad)
