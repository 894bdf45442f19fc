"""A pytest plugin for bench/suite_time.py: the CPU seconds of each test item's setup, call
and teardown (its process and the child processes it waited for), one JSON line each, into
$SUITE_CPU_OUT.<worker>.jsonl. CPU seconds, unlike pytest's --durations, hold still when
other work shares the machine.

Each process also writes what it spent outside the items into
$SUITE_CPU_OUT.<worker>.outside.json (a file apart, so that the item lines stay alike): its
CPU seconds before its first item (start-up, plugins, conftest files, collection) and after
its last one (the session's end, up to pytest_unconfigure), and the wall clock when its last
item ended, so that suite_time.py can tell how long one xdist worker waited for the other,
and the CPU seconds its cyclic garbage collector took, by generation.
An xdist controller runs no items: all of its own CPU is outside them (its children, the
workers, are counted by their own lines)."""

from __future__ import annotations

import gc
import json
import os
import resource
import time

import pytest


def _cpu(children: bool = True) -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    used = own.ru_utime + own.ru_stime
    if children:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        used += kids.ru_utime + kids.ru_stime
    return used


def _out(suffix: str) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return f"{os.environ['SUITE_CPU_OUT']}.{worker}.{suffix}"


class _Process:
    first_item_cpu: float | None = None  # CPU when the first item's setup began
    last_item_cpu: float | None = None  # and when the last item's teardown ended
    last_item_wall: float | None = None


_collecting: list[float] = []
_collector_s = [0.0, 0.0, 0.0]  # CPU seconds of the collections of generations 0, 1 and 2


def _collector(phase: str, info: dict) -> None:
    if phase == "start":
        _collecting[:] = [time.process_time()]
    elif _collecting:
        _collector_s[info["generation"]] += time.process_time() - _collecting.pop()


gc.callbacks.append(_collector)


def _timed(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        before = _cpu()
        if _Process.first_item_cpu is None:
            _Process.first_item_cpu = before
        yield
        after = _cpu()
        _Process.last_item_cpu, _Process.last_item_wall = after, time.time()
        with open(_out("jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"item": item.nodeid, "phase": phase,
                                "cpu_s": round(after - before, 3)}) + "\n")
    return hook


pytest_runtest_setup = _timed("setup")
pytest_runtest_call = _timed("call")
pytest_runtest_teardown = _timed("teardown")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    controller = worker == "main" and getattr(config.option, "numprocesses", None)
    now = _cpu(children=not controller)
    if _Process.first_item_cpu is None:  # ran no items: the controller, or an empty run
        before, after = now, 0.0
    else:
        before, after = _Process.first_item_cpu, now - _Process.last_item_cpu
    with open(_out("outside.json"), "w", encoding="utf-8") as f:
        json.dump({"process": worker, "before_items_s": round(before, 3),
                   "after_items_s": round(after, 3),
                   "last_item_ended": _Process.last_item_wall,
                   "collector_s": [round(t, 3) for t in _collector_s]}, f)
