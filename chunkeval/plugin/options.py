"""The plugin's options: every setting of the table (`chunkeval.config.SETTINGS`) as a
command-line option and an ini key, read back into one `chunkeval.config.Config`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from .. import config as chunkeval_config
from ..config import SETTINGS
from ..gate.baselines import UPDATE_MODES


def _dest(name: str) -> str:
    return "chunkeval_" + name


def add_options(parser: pytest.Parser) -> None:
    """chunkeval's options: one a setting (and its ini key), and the short spellings."""
    group = parser.getgroup("chunkeval", "chunkeval: chunking metrics as tests (each also an "
                                         "ini setting chunkeval_NAME and a [tool.chunkeval] key)")
    for s in SETTINGS:
        listed = s.kind in ("list", "paths")
        comma = " (comma-separated)" if listed and "comma-separated" not in s.help else ""
        help = s.help + comma + s.shown_default
        if s.flag and s.kind == "bool":  # on by default: the option turns it off
            group.addoption(s.pytest_option, dest=_dest(s.name), action="store_const",
                            const=not s.default, default=None,
                            help=f"turn off (default on): {help}" if s.default else help)
        elif s.flag:
            group.addoption(s.pytest_option, dest=_dest(s.name), default=None,
                            metavar=s.name.upper(), help=help)
        if not s.table:  # a table's keys ([tool.chunkeval.sweep]) are the CLI's alone
            parser.addini(s.ini, type="args" if listed else "string", default=None,
                          help=s.help)
    group.addoption("--splitter", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside splitter (repeatable); the same as "
                         "--chunkeval-splitters")
    group.addoption("--retriever", action="append", default=[], metavar="MODULE:ATTR",
                    help="register an outside retriever (repeatable); the same as "
                         "--chunkeval-outside-retrievers")
    group.addoption("--update-baselines", nargs="?", const="all", default=None,
                    metavar="MODE",
                    help="record this run's metrics as the new baselines (merged into the file "
                         "under a lock at the end of the session) instead of comparing against "
                         "them. MODE: all (default: every selected entry), failing (only "
                         "selected entries that fail, changed their chunks or are missing), "
                         "replace (like all, and may replace an unreadable baseline file)")
    group.addoption("--shard", dest=_dest("shard"), default=None, metavar="I/N",
                    help="the same as --chunkeval-shard")
    if importlib.util.find_spec("xdist") is None:
        # Without pytest-xdist, `pytest -n 2` would only say "unrecognized arguments".
        group.addoption("-n", "--numprocesses", dest="chunkeval_no_xdist", default=None,
                        help="(needs pytest-xdist, which is not installed)")


def load_config(config: pytest.Config) -> chunkeval_config.Config:
    given = {s.name: config.getoption(_dest(s.name)) for s in SETTINGS if s.flag}
    given["splitters"] = [*(given["splitters"] or "").split(","), *config.getoption("splitter")]
    given["outside_retrievers"] = [*(given["outside_retrievers"] or "").split(","),
                                   *config.getoption("retriever")]
    pyproject = config.inipath if config.inipath and config.inipath.name == "pyproject.toml" \
        else config.rootpath / "pyproject.toml"
    return chunkeval_config.load(root=config.rootpath, command_line=given,
                                 ini=lambda name: config.getini(name), pyproject=pyproject)


def update_mode(config: pytest.Config) -> None:
    """`--update-baselines` takes an optional MODE, so in `pytest --update-baselines tests/`
    argparse hands it the path: give the path back to the run and take the default mode."""
    given = config.option.update_baselines
    if given is None or given in UPDATE_MODES:
        return
    if not Path(given.split("::")[0]).exists():
        raise pytest.UsageError(f"--update-baselines={given}: not a mode ({', '.join(UPDATE_MODES)})"
                                " nor a test path")
    config.option.update_baselines = "all"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(given)
    else:
        config.args[:] = [given]
        config.args_source = pytest.Config.ArgsSource.ARGS
