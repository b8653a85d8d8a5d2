"""No import cycles inside :mod:`formats`, counting the imports import-linter cannot see.

import-linter (the contracts in ``pyproject.toml``) reads only module-level imports; most of the library
imports lazily inside functions to keep start-up cheap, so a cycle can hide there. This test parses every
module under ``formats/`` with :mod:`ast`, collects every import statement wherever it is (module level,
functions, methods, ``try`` blocks) except those under ``if TYPE_CHECKING:`` (never executed), resolves each to
the module it names (``from pkg import name`` names ``pkg.name`` when that is a module, else ``pkg``), and asserts
the graph of those modules has no cycle. A package's ``__init__`` counts as the module ``pkg``; importing
``pkg.mod`` is an edge to ``pkg.mod`` only (as import-linter counts it), so an ``__init__`` that imports none of
its submodules back cannot close a cycle.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "formats"


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name, for its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` outside ``if TYPE_CHECKING:`` bodies (their ``else:`` counts)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` or its nearest enclosing module of :data:`PACKAGE` (``formats.x.y.attr`` -> ``formats.x.y``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Which modules of :data:`PACKAGE` each module imports (at any level, ``TYPE_CHECKING`` aside)."""
    modules = module_files() if modules is None else modules
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    edges.add(resolved)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One cycle through the first module of ``component`` (a shortest one, by breadth-first search)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component  # unreachable for a strongly connected component


def describe_cycles(graph: dict[str, set[str]]) -> list[str]:
    return [f"{len(c)} modules {c}: e.g. {' -> '.join(a_cycle(graph, c))}" for c in strongly_connected(graph)]


def test_imports_inside_functions_count_and_type_checking_ones_do_not() -> None:
    lazy = ast.parse("def f():\n    from .a import x\n")
    assert [(n.module, n.level) for n in _imports(lazy) if isinstance(n, ast.ImportFrom)] == [("a", 1)]
    typed = ast.parse("if TYPE_CHECKING:\n    import p.a\nelse:\n    import p.b\n")
    assert [a.name for n in _imports(typed) for a in n.names] == ["p.b"]
    assert strongly_connected({"p.a": {"p.b"}, "p.b": {"p.a"}, "p": set()}) == [["p.a", "p.b"]]
    assert a_cycle({"p.a": {"p.b"}, "p.b": {"p.a"}}, ["p.a", "p.b"]) == ["p.a", "p.b", "p.a"]


def test_the_real_graph_resolves_relative_and_from_imports() -> None:
    graph = import_graph()
    assert "formats.core.errors" in graph["formats.core.model"]
    assert all(target.startswith(PACKAGE) for targets in graph.values() for target in targets)


def test_formats_has_no_import_cycles() -> None:
    cycles = describe_cycles(import_graph())
    assert not cycles, "import cycles in formats/ (function-level imports included):\n" + "\n".join(cycles)


def test_the_command_line_has_no_import_cycles() -> None:
    cycles = describe_cycles(import_graph(module_files(package="ckpt_cli")))
    assert not cycles, "import cycles in ckpt_cli/ (function-level imports included):\n" + "\n".join(cycles)


if __name__ == "__main__":
    for line in describe_cycles(import_graph()) or ["no cycles"]:
        print(line)
