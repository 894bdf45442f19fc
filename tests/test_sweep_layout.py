"""The sweep's room: its modules by layer, lowest first, each importing only from below; the
report words and draws a Sweep, and nothing of the sweep imports the report."""

from __future__ import annotations

from test_layout import PACKAGE, import_graph, layer_breaks, room_layers

SWEEP = PACKAGE / "sweep"
SWEEP_LAYERS = (("points", "measure"), ("verdict",), ("halving", "result"), ("runner",),
                ("__init__",))
LARGEST = 500


def test_the_sweep_imports_only_downwards_and_never_the_report():
    graph = import_graph()
    layers = room_layers(SWEEP, SWEEP_LAYERS)
    assert layer_breaks(graph, layers) == []
    up = sorted(f"{a.name} -> {b.relative_to(PACKAGE)}" for a in layers for b in graph[a]
                if b.parent.name in ("report", "cli", "plugin"))
    assert up == []
    # the arrow runs from the report to the sweep
    assert SWEEP / "__init__.py" in graph[PACKAGE / "report" / "sweep_text.py"]


def test_the_sweep_and_its_pages_are_short_modules():
    files = [*SWEEP.glob("*.py"), PACKAGE / "report" / "sweep_page.py",
             PACKAGE / "report" / "sweep_text.py"]
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    assert len(sizes) > 5
    assert {n: s for n, s in sizes.items() if s > LARGEST} == {}
