"""Shards: the plan is deterministic and balanced, and shard results merge into the unsharded
run's results; a sharded baseline update keeps every shard's entries."""

import json
import re

import pytest

from chunkeval import shard
from chunkeval.cli import main
from chunkeval.errors import ConfigError, InputError
from chunkeval.session import read_results

STRATEGIES = "fixed-200,fixed-800,recursive-400-ov40,structure-400,heading-h2,parent-child-r200-s800"


def without_timings(doc: dict) -> dict:
    """Seconds are measured, so they differ between any two runs; the shards reuse the whole
    run's results from the result cache, which it evaluated."""
    return {**{k: v for k, v in doc.items() if k != "result_cache"},
            "results": [{k: v for k, v in r.items() if k not in ("seconds", "reused")}
                        for r in doc["results"]]}


def test_parse_accepts_i_of_n_and_rejects_the_rest():
    assert shard.parse("2/3") == shard.Shard(2, 3)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0", ""):
        with pytest.raises(ConfigError, match="--shard"):
            shard.parse(bad)


def test_plan_balances_by_cost_not_by_name():
    # One costly task and many cheap ones: name order would put "a" and "b" together.
    cost = {("q", "a"): 10.0, ("q", "b"): 9.0, **{("q", f"c{i}"): 1.0 for i in range(9)}}
    bins = shard.plan(cost, 2)
    loads = sorted(sum(cost[t] for t in b) for b in bins)
    assert loads == [14.0, 14.0]
    assert sorted(t for b in bins for t in b) == sorted(cost)
    assert shard.plan(dict(reversed(list(cost.items()))), 2) == bins  # order-free


def test_costs_put_estimates_on_the_measured_scale():
    tasks = [("q", "a"), ("q", "b")]
    est = {("q", "a"): 100.0, ("q", "b"): 300.0}
    got = shard.costs(tasks, est.__getitem__, {("q", "a"): 2.0, ("other", "x"): 5.0})
    assert got == {("q", "a"): 2.0, ("q", "b"): 6.0}


def test_sharded_runs_merge_into_the_unsharded_run(docs, tmp_path, capsys):
    common = ["--corpus", str(docs), "--strategies", STRATEGIES, "--retrievers", "bm25,lsa",
              "--jobs", "1"]
    assert main(["run", *common, "--out", str(tmp_path / "whole")]) == 0
    parts = []
    for i in (1, 2):
        out = tmp_path / f"part{i}"
        # balanced by the seconds the whole run measured
        assert main(["run", *common, "--shard", f"{i}/2", "--out", str(out),
                     "--shard-timings", str(tmp_path / "whole" / "results.json")]) == 0
        parts.append(json.loads((out / "results.json").read_text(encoding="utf-8")))
    tasks = [{tuple(t) for t in p["shard"]["tasks"]} for p in parts]
    assert tasks[0] and tasks[1] and not tasks[0] & tasks[1]
    capsys.readouterr()

    merged_dir = tmp_path / "merged"
    assert main(["merge", str(tmp_path / "part2"), str(tmp_path / "part1"),
                 "--out", str(merged_dir)]) == 0
    assert "merged 2 shard(s)" in capsys.readouterr().out
    merged = json.loads((merged_dir / "results.json").read_text(encoding="utf-8"))
    whole = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    n = len(whole["results"])
    assert whole["result_cache"] == {"enabled": True, "reused": 0, "evaluated": n}
    assert merged["result_cache"] == {"enabled": True, "reused": n, "evaluated": 0}
    assert without_timings(merged) == without_timings(whole)
    assert (merged_dir / "report.html").is_file()


def test_merge_refuses_a_missing_or_repeated_shard(docs, tmp_path, capsys):
    common = ["--corpus", str(docs), "--strategies", "fixed-400,fixed-800",
              "--retrievers", "bm25", "--jobs", "1"]
    assert main(["run", *common, "--shard", "1/2", "--out", str(tmp_path / "p1")]) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "p1"), "--out", str(tmp_path / "m")]) == 2
    assert "shard(s) 2/2 missing" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "p1"), str(tmp_path / "p1")]) == 2
    assert "given twice" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert main(["merge", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_a_bad_shard_setting_names_where_it_was_given(docs, tmp_path, capsys):
    assert main(["run", "--corpus", str(docs), "--shard", "3/2",
                 "--out", str(tmp_path / "o")]) == 2
    assert "option --shard" in capsys.readouterr().err


def test_timings_from_a_file_that_is_not_results_name_it(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"rows": []}')
    with pytest.raises(InputError, match="notes.json.*not a chunkeval results document"):
        read_results(bad)


@pytest.mark.parametrize("damage, said", [
    ("retriever version", "retriever 'bm25' is .*, but in .*p1.* the shards ran other versions"),
    ("metric", r"results\[0\]\.metrics\.recall_at_k\.value is 7\.5, not a number in \[0, 1\]"),
    ("coverage", r"per_query\[0\]\.coverage is -3, not a number in \[0, 1\]"),
    ("rows cut", r"results\[0\]\.per_query has 10 rows, but query set .* has \d+ queries"),
    ("NaN", r"recall_at_k\.value is nan"),
    ("a string", r"recall_at_k\.value is '0\.5'"),
    ("claimed version", r"results\[0\] was measured with bm25 9, its header says 1"),
])
def test_merge_refuses_what_it_should_not_join_naming_file_and_field(docs, tmp_path, capsys,
                                                                       damage, said):
    common = ["--corpus", str(docs), "--strategies", "fixed-400,fixed-800",
              "--retrievers", "bm25", "--jobs", "1"]
    for i in (1, 2):
        assert main(["run", *common, "--shard", f"{i}/2", "--out", str(tmp_path / f"p{i}")]) == 0
    path = tmp_path / "p2" / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    r = doc["results"][0]
    if damage == "retriever version":
        doc["retrievers"]["bm25"]["version"] = "2"
    elif damage == "metric":
        r["metrics"]["recall_at_k"]["value"] = 7.5
    elif damage == "coverage":
        r["per_query"][0]["coverage"] = -3
    elif damage == "rows cut":
        r["per_query"] = r["per_query"][:10]
    elif damage == "NaN":
        r["metrics"]["recall_at_k"]["value"] = float("nan")
    elif damage == "a string":
        r["metrics"]["recall_at_k"]["value"] = "0.5"
    else:
        r["retriever_version"] = "9"
    path.write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "p1"), str(tmp_path / "p2"),
                 "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert re.search(said, err) and "p2/results.json" in err, err
    assert not (tmp_path / "m").exists()
