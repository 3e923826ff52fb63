"""The harness's imports point one way: every module sits in a layer folder and imports only its own
layer and the layers below (LAYERS, bottom first); no module imports another that (through any chain,
at the top of a file or inside a function) imports it back; nothing imports the command line; and the
code that runs in the sandbox's worker imports only the standard library, numpy, torch, libseccomp's
bindings and its own sandbox modules (whatever the worker imports, a student could reach)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parent.parent / "graders" / "harness"
WORKER_SIDE = ("zygote", "worker", "wire", "isolation")  # what `sandbox.zygote` loads, and nothing else
WORKER_THIRD_PARTY = {"numpy", "torch", "pyseccomp"}
LAYERS = ["sandbox", "core", "formats", "batch", "authoring", "cli"]  # bottom first


def module_name(path: Path) -> str:
    parts = list(path.relative_to(HARNESS.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in HARNESS.rglob("*.py")}


def imports_of(name: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import in `name`, relative ones resolved; anywhere in it."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(
                    package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                )
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((candidate if candidate in MODULES else base, node.lineno))
    return found


def harness_graph() -> dict[str, set[str]]:
    graph = {}
    for name in MODULES:
        targets = {t.removeprefix("graders.") for t, _ in imports_of(name)}
        graph[name] = {t for t in targets if t in MODULES and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles(harness_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def layer_of(module: str) -> str:
    """`harness.core.expect` -> "core"; the package itself ("harness") is the graders' facade."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "harness"


def test_every_module_sits_in_a_layer_folder():
    assert sorted(m for m in MODULES if layer_of(m) not in LAYERS and m != "harness") == []


def test_layers_only_point_down():
    graph = harness_graph()
    upward = [
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if m != "harness" and LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m))
    ]
    assert upward == []


def test_the_graders_facade_exposes_only_the_core():
    assert {layer_of(t) for t in harness_graph()["harness"]} <= {"core"}


def test_the_layer_rule_finds_an_upward_import():
    graph = {"harness.core.a": {"harness.batch.b"}, "harness.batch.b": {"harness.core.a"}}
    upward = [
        (m, t) for m, ts in graph.items() for t in ts if LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m))
    ]
    assert upward == [("harness.core.a", "harness.batch.b")]


def test_nothing_imports_the_command_line():
    graph = harness_graph()
    outside = {m: targets for m, targets in graph.items() if layer_of(m) != "cli"}
    assert [m for m, targets in outside.items() if any(layer_of(t) == "cli" for t in targets)] == []


@pytest.mark.parametrize("name", WORKER_SIDE)
def test_the_worker_side_imports_only_what_a_worker_may(name):
    module = f"harness.sandbox.{name}"
    assert module in MODULES
    for target, line in imports_of(module):
        top = target.split(".")[0]
        own = target.startswith("harness.sandbox.") and target.split(".")[-1] in WORKER_SIDE
        assert own or top in sys.stdlib_module_names or top in WORKER_THIRD_PARTY, (
            f"{MODULES[module].name}:{line} imports {target}"
        )


def test_grade_py_starts_the_sandbox_early_for_grading_only():
    """grade.py starts the zygote before anything heavy is imported, unless a command that grades
    nothing in this process runs: its list is cli.COMMANDS, which it cannot import that early."""
    import grade
    from graders.harness.cli import COMMANDS

    assert set(grade.COMMANDS) == set(COMMANDS)
