"""A pytest plugin for bench/suite_time.py: the CPU seconds of each test item's setup, call
and teardown (its process and the child processes it waited for), one JSON line each, into
$SUITE_CPU_OUT.<worker>.jsonl. CPU seconds, unlike pytest's --durations, hold still when
other work shares the machine."""

from __future__ import annotations

import json
import os
import resource

import pytest


def _cpu() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                           resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        before = _cpu()
        yield
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(f"{os.environ['SUITE_CPU_OUT']}.{worker}.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"item": item.nodeid, "phase": phase,
                                "cpu_s": round(_cpu() - before, 3)}) + "\n")
    return hook


pytest_runtest_setup = _timed("setup")
pytest_runtest_call = _timed("call")
pytest_runtest_teardown = _timed("teardown")
