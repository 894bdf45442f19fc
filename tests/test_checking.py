"""Reading a JSON record back and writing it out again: the checks and the key order."""

from __future__ import annotations

import json

import pytest

from chunkeval.checking import Check
from chunkeval.errors import InputError
from chunkeval.measured import ChunkStats, Overlap, Seconds
from chunkeval.results import CorpusSummary


def test_has_refuses_what_is_not_an_object_before_looking_for_keys():
    with pytest.raises(InputError, match=r"run\.json.*chunks is missing or not an object"):
        Check("run.json", "chunks").has(["count"], "count")
    with pytest.raises(InputError, match=r"chunks\.count is missing"):
        Check("run.json", "chunks").has({}, "count")


def test_a_record_writes_its_fields_in_declared_order_and_leaves_out_an_unset_hash():
    stats = ChunkStats(3, 12.5, 20, 1, Overlap(2, 1, 4.0, 8))
    assert json.dumps(stats.to_json()) == (
        '{"count": 3, "mean_len": 12.5, "max_len": 20, "under_30": 1, '
        '"overlap": {"boundaries": 2, "zero": 1, "mean": 4.0, "max": 8}}')
    hashed = ChunkStats(3, 12.5, 20, 1, Overlap(2, 1, 4.0, 8), "0" * 64).to_json()
    assert list(hashed)[-1] == "hash"
    assert ChunkStats.from_json(hashed, Check("run.json")) == ChunkStats(
        3, 12.5, 20, 1, Overlap(2, 1, 4.0, 8), "0" * 64)


@pytest.mark.parametrize("record, field, bad, problem", [
    (Overlap(2, 1, 4.0, 8), "zero", 1.5, "is 1.5, not a whole number >= 0"),
    (Seconds(0.1, 0.2, 0.3), "index", -1.0, "is -1.0, not a finite number >= 0"),
    (CorpusSummary("docs", "ab12", 4, 900), "name", "", "is '', not a string"),
])
def test_a_record_read_back_checks_each_field_by_its_declared_type(record, field, bad, problem):
    data = record.to_json()
    assert type(record).from_json(data, Check("run.json", "x")) == record
    data[field] = bad
    with pytest.raises(InputError, match=rf"x\.{field} {problem}".replace("[", r"\[")):
        type(record).from_json(data, Check("run.json", "x"))
