"""The pytest plugin: options, test items, fixtures, baselines and the summary.

Registered as the `chunkeval` pytest11 entry point, so a project that installs chunkeval
gets it. Settings come from `chunkeval.config` (command line, ini, `[tool.chunkeval]`), and
what they select is one `chunkeval.session.Session`, as for the chunkeval command.

With a `[tool.chunkeval]` section in the project's pyproject.toml, the plugin adds its own
items to the run, collected from that file, so the project needs no test module:

- `test_recall[STRATEGY-RETRIEVER-QUERYSET]`: every metric against the baseline;
- `test_cut_rate[STRATEGY-QUERYSET]`: for every strategy that keeps structure;
- `test_invariants[STRATEGY]`: for the project's own splitters, the invariants
  (`chunkeval.invariants`) on every document of the corpus, then on `invariant_examples`
  hypothesis-generated ones (`chunkeval.testing`).

A project that prefers its own test modules asks for the fixtures instead:
`retrieval_case`, `cut_case` and `strategy_name` are parametrised over the configured
matrix, and `chunkeval` is a checker (`check_retrieval(case)`, `check_cut_rate(case)`).

Results travel as test-report user properties, so the controller of an xdist run sees every
worker's numbers; only the controller writes the baseline file and the summary.

The hooks and fixtures pytest sees are in `hooks` (imported here, the module the entry point
names); `options` reads the settings, `collection` and `items` decide which tests run where,
`checker` gates one case, `summary` is the controller's side; the summary's text is rendered
by `chunkeval.report.summary`. The session owns its registries (`start.own_components`):
the project's splitters and retrievers are known by name until it ends, and no longer.
"""

from __future__ import annotations

from .hooks import (chunkeval, chunkeval_state, corpus, evaluation, pytest_addoption,
                    pytest_collect_file, pytest_collection_finish,
                    pytest_collection_modifyitems, pytest_configure, pytest_generate_tests,
                    pytest_load_initial_conftests, pytest_runtest_teardown, pytest_unconfigure,
                    pytest_xdist_make_scheduler)

__all__ = ["chunkeval", "chunkeval_state", "corpus", "evaluation", "pytest_addoption",
           "pytest_collect_file", "pytest_collection_finish", "pytest_collection_modifyitems",
           "pytest_configure", "pytest_generate_tests", "pytest_load_initial_conftests",
           "pytest_runtest_teardown",
           "pytest_unconfigure", "pytest_xdist_make_scheduler"]

