"""Chunking metrics as tests: every strategy x retriever x query set against the baseline.

Run `pytest --update-baselines` to record the baselines from a real run.
"""


def test_recall(chunkeval, retrieval_case):
    """Recall@k, budget recall, complete rate and doc hit@k: no real regression."""
    chunkeval.check_retrieval(retrieval_case)


def test_cut_rate(chunkeval, cut_case):
    """Structure-aware strategies keep tables and code blocks whole."""
    chunkeval.check_cut_rate(cut_case)
