"""Defaults once: every default is defined in the settings table (config.SETTINGS, with
results.Settings and the gate's Tolerance it names) or with the type that uses it, and only
named everywhere else. These checks read the package's source for the re-spellings that had
crept in: a setting's default written again as a literal in a signature, a field, an option's
`default=`, an `or` fallback or the section `chunkeval init` writes; the default retriever
"bm25" and the analyzer "char2" in such places; a default list such as ("bm25", "lsa",
"hybrid") spelled a second time. Each finding names the file and line."""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

import chunkeval
from chunkeval import config, strategies
from chunkeval.gate import calibrate, power
from chunkeval.gate.baselines import Record
from chunkeval.gate.verdict import DEFAULT_TOLERANCE, Tolerance
from chunkeval.results import DEFAULTS, Settings

PACKAGE = Path(chunkeval.__file__).parent


def _where(thing) -> tuple[str, str]:
    """(module path in the package, qualified name): found by import, so that a type keeps
    its place here when its module is split."""
    module = Path(inspect.getsourcefile(thing)).relative_to(PACKAGE).as_posix()
    return module, thing.__qualname__


# The settings a run hands down. `family` is left out: the gate counts it per session, no
# one sets it. A switch (kind bool) is left out too: off or on is no value to re-spell.
NAMES = ({f.name for f in fields(Settings)} | {f.name for f in fields(Tolerance)}
         | {s.name for s in config.SETTINGS if s.kind != "bool"}) - {"family"}
# The types whose fields are the definitions.
DEFINING = {_where(Settings), _where(Tolerance)}
# A setting's name used for another thing, with a default of its own.
OTHER_THINGS = {
    (_where(power.smallest_drop), "min_effect"): "no floor unless the gate's is handed in",
    (_where(power.set_power), "min_effect"): "the same",
}
# Values that are defaults wherever they stand in for something not given: the retriever,
# the analyzer the lexical indexes once assumed, the length measure.
DEFAULT_VALUES = (config.ONE_RETRIEVER, "char2", DEFAULTS.length)
# Default collections: each is spelled once, where it is defined (or derived there, as the
# gated metrics are from the metric table).
COLLECTIONS = {
    "config.LEXICAL_RETRIEVERS": config.LEXICAL_RETRIEVERS,
    "strategies.REFERENCE": strategies.REFERENCE,
    "strategies.FEW": strategies.FEW,
    "Settings.budgets": DEFAULTS.budgets,
    "Tolerance.gated": DEFAULT_TOLERANCE.gated,
    "calibrate.DROPS": calibrate.DROPS,
}


def _literal(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None and not isinstance(node.value, bool)
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(isinstance(e, ast.Constant) for e in node.elts)
    return False


def _holds_default_value(node: ast.AST) -> bool:
    """A literal that is, or lists, one of DEFAULT_VALUES."""
    return _literal(node) and any(isinstance(n, ast.Constant) and n.value in DEFAULT_VALUES
                                  for n in ast.walk(node))


def _option_name(call: ast.Call) -> str | None:
    """The setting an add_argument/addoption call's option is for: its dest, else its name."""
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    for arg in call.args:
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
            return str(arg.value).removeprefix("--").replace("-", "_")
    return None


def _collection(node: ast.AST) -> str | None:
    if not _literal(node) or not isinstance(node, (ast.Tuple, ast.List)):
        return None
    values = [e.value for e in node.elts]
    for name, default in COLLECTIONS.items():
        if sorted(map(str, values)) == sorted(map(str, default)):
            return name
    return None


def _defaults(tree: ast.AST):
    """(owner.name, default node, kind) of every parameter default, class field and
    option `default=` in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults),
                     *[(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]]
            owner = getattr(node, "name", "lambda")
            for param, default in pairs:
                yield f"{owner}.{param.arg}", default, "parameter"
        elif isinstance(node, ast.ClassDef):
            for st in node.body:
                if (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                        and st.value is not None):
                    yield f"{node.name}.{st.target.id}", st.value, "field"
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "default":
                    yield f"option.{_option_name(node)}", kw.value, "option"


def respelled(source: str, module: str) -> list[str]:
    """Every re-spelled default in one module's source, as "module:line: what"."""
    tree = ast.parse(source)
    found = []

    def say(node: ast.AST, what: str) -> None:
        found.append(f"{module}:{node.lineno}: {what}")

    for owner, default, kind in _defaults(tree):
        cls, _, name = owner.rpartition(".")
        if kind == "field" and (module, cls) in DEFINING:
            continue
        if name in NAMES and _literal(default) and ((module, cls), name) not in OTHER_THINGS:
            say(default, f"{kind} {owner} = {ast.unparse(default)}: name the setting's default")
        elif _holds_default_value(default):
            say(default, f"{kind} {owner} = {ast.unparse(default)}: a default spelled again")
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) \
                and _holds_default_value(node.values[-1]):
            say(node.values[-1], f"`or {ast.unparse(node.values[-1])}`: a default spelled again")
    return found


def collections_spelled(sources: dict[str, str]) -> dict[str, list[str]]:
    """Where each default collection is spelled, as "module:line"."""
    where: dict[str, list[str]] = {name: [] for name in COLLECTIONS}
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            name = _collection(node)
            if name:
                where[name].append(f"{module}:{node.lineno}")
    return where


TEMPLATE_LINE = re.compile(r"^#?\s*([a-z_]+)\s*=\s*(\S+)")


def template_respellings(text: str, name: str) -> list[str]:
    """Lines of a TOML template that write a setting's value instead of a $placeholder."""
    return [f"{name}:{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1)
            if (m := TEMPLATE_LINE.match(line)) and m[1] in config.BY_NAME
            and not m[2].startswith("$")]


def _sources() -> dict[str, str]:
    return {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(PACKAGE.rglob("*.py")) if "templates" not in p.parts}


def test_no_default_is_spelled_again_in_the_package():
    sources = _sources()
    assert len(sources) > 50
    found = [f for module, source in sources.items() for f in respelled(source, module)]
    assert found == [], "\n".join(found)


def test_each_default_collection_is_spelled_once():
    where = collections_spelled(_sources())
    twice = {name: spots for name, spots in where.items() if len(spots) > 1}
    assert twice == {}, "\n".join(f"{name} spelled at {', '.join(spots)}"
                                  for name, spots in twice.items())
    assert len(where["config.LEXICAL_RETRIEVERS"]) == 1  # the scan sees the definition


def test_the_init_templates_write_placeholders_for_settings():
    templates = sorted((PACKAGE / "cli" / "templates").glob("*.toml"))
    assert templates
    found = [f for t in templates
             for f in template_respellings(t.read_text(encoding="utf-8"), t.name)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source, says", [
    ('def build_index(texts, *, analyzer: str = "char2"):\n    pass\n',
     'm.py:1: parameter build_index.analyzer = \'char2\''),
    ("def run(k=5):\n    pass\n", "m.py:1: parameter run.k = 5"),
    ("class Power:\n    alpha: float = 0.05\n", "m.py:2: field Power.alpha = 0.05"),
    ('p.add_argument("--retriever", dest="compared", default="bm25")\n',
     "m.py:1: option option.compared = 'bm25'"),
    ('p.add_argument("--max-queries", default=800)\n',
     "m.py:1: option option.max_queries = 800"),
    ('spelled = list(cfg.retrievers) or ["bm25"]\n', "m.py:1: `or ['bm25']`"),
])
def test_the_scan_finds_each_kind_of_respelling(source, says):
    found = respelled(source, "m.py")
    assert len(found) == 1 and found[0].startswith(says), found


def test_the_scan_leaves_definitions_and_other_things_alone():
    assert respelled("class Settings:\n    k: int = 5\n", _where(Settings)[0]) == []
    assert respelled("class Record:\n    coverage: str = UNSTATED_COVERAGE\n",
                     _where(Record)[0]) == []
    assert respelled("class Settings:\n    k: int = 5\n", "elsewhere.py") != []
    assert respelled("def run(k=DEFAULTS.k, seed=SEED):\n    pass\n", "m.py") == []
    # a retriever named in the table that defines it is no default
    assert respelled('Retriever("bm25", "1", lexical=True)\n', "retrieval/registry.py") == []


def test_a_collection_spelled_twice_is_found():
    where = collections_spelled({"a.py": 'X = ("bm25", "lsa", "hybrid")\n',
                                 "b.py": 'retrievers = ["hybrid", "bm25", "lsa"]\n'})
    assert where["config.LEXICAL_RETRIEVERS"] == ["a.py:1", "b.py:1"]


def test_a_template_that_writes_a_default_is_found():
    text = "# k = $k\n# strict = false\nretrievers = [\"bm25\"]\n"
    assert template_respellings(text, "t.toml") == ["t.toml:2: # strict = false",
                                                     't.toml:3: retrievers = ["bm25"]']


def test_an_index_built_without_an_analyzer_takes_the_settings_one():
    # auto, resolved on the texts: English gets word+stem, so "packaging" meets "packages"
    from chunkeval.retrieval import build_index

    texts = ["the packages are listed here", "nothing of the kind"]
    assert DEFAULTS.analyzer == "auto"
    scores = build_index("bm25", texts).scores(["packaging"])
    assert scores[0, 0] > 0 and scores[0, 1] == 0


def test_the_halving_threshold_is_stated_from_its_constant():
    # help texts once wrote the number out, and would have gone on saying it after a change
    stated = re.compile(rf"\b{config.HALVING_FROM} configurations")
    found = [f"{module}:{node.lineno}" for module, source in _sources().items()
             for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and stated.search(node.value)]
    assert found == [], found
