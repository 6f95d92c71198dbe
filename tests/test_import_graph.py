"""No import cycles in `jaxbai` or `experiments`, and no import against the layers of
docs/contributing.md, function-level imports included.

Every ``import`` and ``from … import`` statement of a module counts, wherever it stands (module
level, inside a function, under ``TYPE_CHECKING``): an edge from the module to the module it
names (``from pkg import name`` names ``pkg.name`` where that is a module, else ``pkg``). A
cycle is a strongly connected component of more than one module.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def modules(root: pathlib.Path, packages: tuple[str, ...]) -> dict[str, pathlib.Path]:
    """Dotted module name → file, for every ``.py`` file of ``packages`` under ``root``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, pathlib.Path]) -> str | None:
    """The longest known module that ``name`` is or lies in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(known: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    """Module → the known modules its import statements name (itself excluded)."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(_target(alias.name, known) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    edges.add(full if full in known else _target(base, known))
        graph[name] = edges - {None, name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each
    sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
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


def test_no_import_cycles():
    """The driver and the per-episode simulation imported each other (a function-level import
    one way); `EpisodicTopTwo` now lives with `PerEpisode` (`jaxbai.toptwo.episodic`)."""
    known = modules(ROOT, ("jaxbai", "experiments"))
    assert len(known) > 100
    assert cycles(import_graph(known)) == []


def test_a_function_level_cycle_is_found(tmp_path):
    """A cycle closed only by an import inside a function, or under ``TYPE_CHECKING``, or
    through a relative import, is found; a one-way chain is not a cycle."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.a import g\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\n"
    )
    (package / "d.py").write_text("from . import c\n")
    (package / "e.py").write_text("import pkg.a\n")
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert graph["pkg.e"] == {"pkg.a"} and graph["pkg.d"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]


# ----------------------------------------------------------------------------- the layers
CONTRIBUTING = ROOT / "docs" / "contributing.md"


def layers(page: str) -> dict[str, int]:
    """Module or package → its layer number, from the table of docs/contributing.md (rows
    ``| N name | `module`, `module` | … |``)."""
    found: dict[str, int] = {}
    for number, cell in re.findall(r"^\| (\d+) [^|]*\| ([^|]*) \|", page, re.M):
        for module in re.findall(r"`([\w.]+)`", cell):
            assert module not in found, f"{module} is in two layers"
            found[module] = int(number)
    return found


def layer_of(module: str, table: dict[str, int]) -> int | None:
    """The layer of the longest entry of ``table`` that ``module`` is or lies in."""
    name = module
    while name and name not in table:
        name = name.rpartition(".")[0]
    return table.get(name)


def against(graph: dict[str, set[str]], table: dict[str, int]) -> list[tuple[str, str]]:
    """Every (importer, imported) where the imported module lies in a higher layer."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if layer_of(target, table) > layer_of(module, table)
    )


def test_the_layers_are_the_contributor_pages():
    """Every module of jaxbai and experiments lies in a layer of docs/contributing.md, and
    none imports from a layer above its own (the mechanisms imported the trials' samplers
    inside their functions; `jaxbai.mechanisms` now holds them)."""
    table = layers(CONTRIBUTING.read_text(encoding="utf-8"))
    assert sorted(set(table.values())) == list(range(1, max(table.values()) + 1))
    known = modules(ROOT, ("jaxbai", "experiments"))
    assert set(table) <= set(known), "the table names a module that does not exist"
    # A module of jaxbai lies in a layer of its own package or module, not in the layer of
    # the package's namespace (which would let a new module import anything below it).
    unplaced = [m for m in known if m != "jaxbai" and layer_of(m, table) == table["jaxbai"]]
    assert unplaced == []
    assert [m for m in known if layer_of(m, table) is None] == []
    assert against(import_graph(known), table) == []


def layer_diagram(graph: dict[str, set[str]], page: str) -> str:
    """The Mermaid flowchart of docs/contributing.md: one node per layer of ``page``'s table,
    bottom to top, and an arrow from a layer to each other layer one of its modules imports."""
    table = layers(page)
    names = dict(re.findall(r"^\| (\d+) ([^|]*?) \|", page, re.M))
    edges = sorted(
        {
            (layer_of(module, table), layer_of(target, table))
            for module, targets in graph.items()
            for target in targets
        }
    )
    lines = ["flowchart BT"]
    lines += [
        f'    L{n}["{n} {name}"]' for n, name in sorted(names.items(), key=lambda x: int(x[0]))
    ]
    lines += [f"    L{a} --> L{b}" for a, b in edges if a != b]
    return "\n".join(lines)


def test_the_contributor_pages_picture_is_the_import_graph():
    """The picture of docs/contributing.md is drawn from the imports as they are
    (`layer_diagram`; print it with ``python tests/test_import_graph.py``)."""
    page = CONTRIBUTING.read_text(encoding="utf-8")
    drawn = re.search(r"```mermaid\n(.*?)\n```", page, re.S)
    assert drawn is not None, "docs/contributing.md has no mermaid picture"
    graph = import_graph(modules(ROOT, ("jaxbai", "experiments")))
    assert drawn.group(1) == layer_diagram(graph, page)


def test_an_import_from_above_is_found(tmp_path):
    """A function-level import of a higher layer is against the layers; of a lower one or the
    same, not."""
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    for path in ("__init__.py", "low/__init__.py", "low/a.py", "high.py"):
        (package / path).write_text("")
    (package / "low" / "b.py").write_text("import pkg.low.a\ndef f():\n    from pkg import high\n")
    (package / "high.py").write_text("from pkg.low import b\n")
    table = layers("| 1 low | `pkg.low` | x |\n| 2 high | `pkg.high`, `pkg` | y |\n")
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert against(graph, table) == [("pkg.low.b", "pkg.high")]


if __name__ == "__main__":  # the picture of docs/contributing.md, from the imports as they are
    found = import_graph(modules(ROOT, ("jaxbai", "experiments")))
    print(layer_diagram(found, CONTRIBUTING.read_text(encoding="utf-8")))
