"""The package's import graph, read from source, and the layer rules it must keep.

Every import counts: module level, inside functions and under `if TYPE_CHECKING:`, because each
is a dependency a reader has to follow and a lazy import only hides a circle until it runs.
`from a.b import c` is an edge to `a.b.c` when that is a module, else to `a.b`.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The layer of a module: the first rule whose prefix matches (most specific first).
LAYERS = (("core", "core"), ("ros", "ros"), ("nodes", "nodes"), ("bag", "bag"), ("ar", "ar"), ("demo", "demo"),
          ("cli", "cli"), ("command_extras", "cli"), ("__main__", "cli"))
# Layers that may never be imported from a layer: (importer, imported) pairs.
FORBIDDEN = {
    ("core", "ros"), ("core", "nodes"), ("core", "bag"), ("core", "cli"), ("core", "demo"),
    ("nodes", "cli"), ("bag", "cli"),
    ("ros", "nodes"), ("ros", "bag"), ("ros", "cli"), ("ros", "demo"),
    ("bag", "nodes"),
    ("core", "ar"), ("ros", "ar"), ("nodes", "ar"), ("bag", "ar"), ("ar", "cli"), ("ar", "bag"),
}
# Outside packages core may not import: ROS itself and its message packages.
ROS_ONLY = ("rclpy", "launch", "launch_ros", "rosbag2_py", "ament_index_python", "cityseeker_interfaces",
            "builtin_interfaces", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs",
            "visualization_msgs", "std_srvs", "action_msgs", "unique_identifier_msgs", "rosidl_runtime_py")


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted (an outside package keeps its full name)
    path: str  # importing file, relative to the package's parent
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports(root: Path) -> Iterator[Import]:
    known = modules(root)
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(name, alias.name, rel, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    yield Import(name, full if full in known else base, rel, node.lineno)


def layer(module: str, package: str) -> str | None:
    rest = module[len(package) + 1:] if module.startswith(package + ".") else None
    if rest is None:
        return None
    for prefix, name in LAYERS:
        if rest == prefix or rest.startswith(prefix + "."):
            return name
    return None


def layer_violations(edges: Iterable[Import], package: str) -> list[str]:
    found = []
    for edge in edges:
        source, target = layer(edge.source, package), layer(edge.target, package)
        if (source, target) in FORBIDDEN:
            found.append(f"{edge}: the {source} layer may not import the {target} layer")
        elif source == "core" and edge.target.split(".")[0] in ROS_ONLY:
            found.append(f"{edge}: core never imports ROS")
    return found


def circles(edges: Iterable[Import], package: str) -> list[list[Import]]:
    """Each strongly connected set of modules, as the imports that tie it (Tarjan's algorithm)."""
    inside = [e for e in edges if e.target.startswith(package + ".") or e.target == package]
    graph: dict[str, set[str]] = {}
    for e in inside:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the package's module count
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [sorted({e for e in inside if e.source in c and e.target in c}, key=str) for c in components]


def report(root: Path) -> list[str]:
    """Every broken rule and every circle in the package at `root`, one line each."""
    package = root.name
    edges = list(imports(root))
    lines = layer_violations(edges, package)
    for ties in circles(edges, package):
        lines.append("import circle: " + "; ".join(str(e) for e in ties))
    return lines
