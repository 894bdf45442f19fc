"""The README and docs/ say what the code does: every setting is in the configuration
reference (generated from the settings table), every command the README prints exists, and
CI runs the test command exactly as the README prints it."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import chunkeval
from chunkeval import config
from chunkeval.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def shell_commands(markdown: str) -> list[str]:
    """Every command in the Markdown's sh code blocks: lines joined at a trailing backslash,
    comments cut, `&&` chains split."""
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", markdown, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*", "", line).strip()
            commands += [c.strip() for c in line.split("&&") if c.strip()]
    return commands


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_the_configuration_reference_is_the_settings_table():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert text == config.reference_markdown(), \
        "docs/configuration.md is stale: python -m chunkeval.config > docs/configuration.md"
    missing = [s.name for s in config.SETTINGS
               if f"| `{f'{s.table}.{s.key}' if s.table else s.name}` |" not in text]
    assert missing == []
    # every option a setting gives appears in the row
    for s in config.SETTINGS:
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| `{f'{s.table}.{s.key}' if s.table else s.name}` |"))
        for option in filter(None, [s.cli, s.pytest_option if s.flag else None]):
            assert f"`{option}`" in row, (s.name, option)


def test_every_chunkeval_command_in_the_readme_parses():
    commands = [c for c in shell_commands(README) if c.startswith("chunkeval ")]
    assert len(commands) >= 4
    parser = build_parser()
    for command in commands:
        try:
            parser.parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"README command does not parse: {command}")


def test_every_pytest_option_in_the_readme_exists(tmp_path):
    commands = [c for c in shell_commands(README) if c.startswith("pytest")]
    assert commands
    env = {**os.environ, "PYTHONPATH": str(Path(chunkeval.__file__).resolve().parent.parent)}
    helped = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120).stdout
    for command in commands:
        for option in re.findall(r"(?<!\S)(--?[\w-]+)", command):
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", helped), \
                f"README: pytest has no option {option} ({command})"


def test_the_quickstart_commands_name_tox_environments_that_exist():
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    envs = {s.removeprefix("testenv:") for s in tox.sections() if s.startswith("testenv:")}
    named = [c for c in shell_commands(README) if c.startswith(".venv/bin/tox")]
    assert [c.split()[-1] for c in named] == ["run", "test"]
    assert {c.split()[-1] for c in named} <= envs


def test_ci_runs_the_test_command_exactly_as_the_readme_prints_it():
    quickstart = re.search(r"^## Quickstart\n.*?^```sh\n(.*?)^```", README, re.S | re.M).group(1)
    test_line = next(line for line in quickstart.splitlines() if line.endswith("tox -e test"))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_line in ci.splitlines()
    assert "fonts-noto-cjk" in ci and "fonts-noto-cjk" in README


def test_links_between_the_pages_lead_somewhere():
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_docs_index_lists_every_page():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert {p.name for p in DOCS.glob("*.md")} - {"index.md"} <= listed


def test_the_action_passes_its_inputs_to_the_gate_and_the_comment():
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    inputs = re.search(r"^inputs:\n(.*?)^\S", action, re.S | re.M).group(1)
    assert re.findall(r"^  ([\w-]+):", inputs, re.M) == [
        "python-version", "extras", "base", "pytest-args", "install", "token"]
    assert "using: composite" in action and "--chunkeval-base" in action
    call = re.search(r"python -m chunkeval\.pr_comment (.*)", action).group(1)
    from chunkeval import pr_comment
    options = set(re.findall(r"--[\w-]+", call))
    assert options == {"--verdict", "--exit-code", "--base"}
    assert all(o in Path(pr_comment.__file__).read_text(encoding="utf-8") for o in options)


def test_every_bench_script_is_listed():
    listed = (DOCS / "bench.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "bench").glob("*.py")) if f"`{p.name}`" not in listed]
    assert missing == []


def test_the_design_page_names_every_room():
    # a folder of the package or a module at its top; a new one is placed on the map
    package = Path(chunkeval.__file__).parent
    rooms = {p.name + ("/" if p.is_dir() else "") for p in package.iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"}
    page = (DOCS / "design.md").read_text(encoding="utf-8")
    assert len(rooms) > 30
    assert sorted(r for r in rooms if f"`{r}`" not in page and r != "__main__.py") == []


def _prose() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
            for p in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_defaults_the_prose_states_are_the_package_s():
    # the docs say a default where it helps a reader; each such statement is read back here
    from chunkeval import stats, store
    from chunkeval.gate.verdict import DEFAULT_TOLERANCE

    said = []
    for name, text in _prose().items():
        for m in re.finditer(r"`([a-z_]+)` \(default ([\w.,]+)\)", text):
            if m[1] in config.BY_NAME:
                said.append((f"{name}: {m[0]}", m[2], str(config.BY_NAME[m[1]].default)))
        for m in re.finditer(r"\$(CHUNKEVAL_\w+_MB), default ([\d,]+)", text):
            limits = {store.RESULTS_LIMIT_VAR: store.RESULTS_LIMIT_MB,
                      store.CHUNKS_LIMIT_VAR: store.CHUNKS_LIMIT_MB}
            said.append((f"{name}: {m[0]}", _number(m[2]), limits[m[1]]))
        for m in re.finditer(r"([\d,]+) (?:bootstrap )?resamples(?: of the questions)?"
                             r"(?:\)| \(seed (\d+)\)|, seed (\d+)\))", text):
            # the gate's family-wise intervals resample more than a report's intervals do
            gate = "Bonferroni" in text[max(0, m.start() - 200):m.start()]
            said.append((f"{name}: {m[0]}", _number(m[1]),
                         DEFAULT_TOLERANCE.resamples if gate else stats.RESAMPLES))
            if m[2] or m[3]:
                said.append((f"{name}: {m[0]}", int(m[2] or m[3]), stats.SEED))
    assert len(said) >= 4  # the statements this reads are still there to read
    wrong = [f"{where}: the package's is {actual}" for where, stated, actual in said
             if stated != actual]
    assert wrong == [], "\n".join(wrong)


def test_every_code_fence_in_the_docs_is_closed():
    # a block cut in two when the README was split left docs/adopting.md with an odd count,
    # and everything after it rendered with code and prose swapped
    open_fences = [name for name, text in _prose().items()
                   if sum(1 for line in text.splitlines() if line.lstrip().startswith("```")) % 2]
    assert open_fences == []
