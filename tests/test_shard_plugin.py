"""pytest --shard: the shards' items together are the unsharded run's, and baselines recorded
shard by shard into one file equal the baseline of an unsharded update."""

import json
import re

from test_plugin import BASELINE, project, record, run  # noqa: F401 (project: a fixture)

pytest_plugins = ["pytester"]


def passed(result) -> set[str]:
    return set(re.findall(r"^(\S+::\S+) PASSED", result.stdout.str(), re.M))


def test_shards_split_the_items_and_their_baselines_merge(project):
    whole = record(project)
    (project.path / BASELINE).unlink()
    seen = []
    for i in (1, 2):
        result = run(project, "--update-baselines", "--shard", f"{i}/2", "-v")
        assert result.ret == 0, result.stdout.str()
        assert "deselected" in result.stdout.str()
        seen.append(passed(result))
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    # Every entry of the unsharded update, none lost when the second shard wrote the file.
    assert json.loads((project.path / BASELINE).read_bytes()) == json.loads(whole)
    full = run(project, "-v")
    assert full.ret == 0
    assert seen[0] | seen[1] == passed(full)


def test_a_bad_shard_is_a_usage_error(project):
    result = run(project, "--chunkeval-shard", "0/2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*option --*shard: *I must be between 1 and N*"])
