"""The layout's rules, read from the source: import graph, one wiring, a thin engine.

Imports are read with ``ast`` (nothing is imported): module-level imports form the
graph a process loads; an import inside a function runs only when called, and an
``if TYPE_CHECKING:`` import never runs, so both are left out of the graph (a direct
import of a forbidden package is refused at any level all the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import memstrata

SRC = Path(memstrata.__file__).resolve().parent
ENGINE_MODULES = (
    "memstrata.engine",
    "memstrata.capabilities",
    "memstrata.wiring",
    "memstrata.service.core",
    "memstrata.service.capability",
    "memstrata.service.operations",
    "memstrata.service.ops",
)
# What only memstrata.wiring may construct: memstrata's backends, index adapters and the
# stores over them, and the third-party clients of the servers behind them.
BACKEND_CONSTRUCTORS = frozenset(
    {
        "EdgeIndex",
        "QdrantServerIndex",
        "QdrantClient",
        "EmbeddedValkey",
        "RedisBackend",
        "RedisBackend.from_url",
        "InMemoryBackend",
        "Redis",
        "Redis.from_url",
        "redis.Redis",
        "redis.Redis.from_url",
        "RedisCluster",
        "RedisCluster.from_url",
        "LongTermStore",
        "WorkingMemory",
        "MemoryStore",
        "WriteQueue",
    }
)
# Modules that define a backend (its own factories and health clients) and the test
# doubles of memstrata.testing; everything else gets its parts from memstrata.wiring.
CONSTRUCTION_ALLOWED = (
    "memstrata.wiring",
    "memstrata.testing",
    "memstrata.working.embedded",
    "memstrata.working.redis_backend",
    "memstrata.longterm.edge",
    "memstrata.longterm.qdrant_server",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text(), str(p)) for p in SRC.rglob("*.py")}


def _within(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _resolved(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The memstrata modules an import statement loads."""
    known = _modules()
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name.startswith("memstrata"))
        return
    base = node.module or ""
    if node.level or not base.startswith("memstrata"):
        return
    for alias in node.names:
        module = f"{base}.{alias.name}"
        # ``from memstrata.service import wire`` loads a module; a name, its package.
        yield module if module in known else base


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is loaded (not in functions, not type-only)."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                stack.extend(handler.body)


def _all_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


@cache
def _graph(*, with_packages: bool = False) -> dict[str, frozenset[str]]:
    """Module -> the memstrata modules it imports at load time. ``with_packages``:
    each module also loads its package's ``__init__`` (what a process loads; left
    out of the cycle check, where a package re-exporting its modules is no cycle)."""
    known = _modules()
    graph: dict[str, frozenset[str]] = {}
    for name, tree in known.items():
        edges = {m for node in _top_level_imports(tree) for m in _resolved(node)}
        parent = name.rpartition(".")[0]
        if with_packages and parent in known:
            edges.add(parent)
        graph[name] = frozenset(e for e in edges if e in known and e != name)
    return graph


def _closure(roots: Iterable[str]) -> set[str]:
    graph = _graph(with_packages=True)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for edge in edges:
                if edge not in index:
                    index[edge] = low[edge] = counter
                    counter += 1
                    stack.append(edge)
                    on_stack.add(edge)
                    work.append((edge, iter(sorted(graph[edge]))))
                    break
                if edge in on_stack:
                    low[node] = min(low[node], index[edge])
            else:
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

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_the_modules_import_each_other_without_cycles() -> None:
    assert _cycles() == []


def test_the_write_path_imports_neither_the_router_nor_decisions() -> None:
    forbidden = ("memstrata.router", "memstrata.decision")
    write = [name for name in _modules() if _within(name, ("memstrata.write",))]
    assert len(write) > 5
    for name in write:
        direct = {m for node in _all_imports(_modules()[name]) for m in _resolved(node)}
        assert not [m for m in direct if _within(m, forbidden)], name
    loaded = _closure(write)
    assert not sorted(m for m in loaded if _within(m, forbidden))


def test_the_client_imports_no_engine_module() -> None:
    client = [name for name in _modules() if _within(name, ("memstrata.client",))]
    assert client
    loaded = _closure(client)
    assert not sorted(m for m in loaded if _within(m, ENGINE_MODULES))


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = _called_name(func.value)
        return None if inner is None else f"{inner}.{func.attr}"
    return None


def test_only_the_wiring_constructs_backends_and_indexes() -> None:
    found = []
    for name, tree in _modules().items():
        if _within(name, CONSTRUCTION_ALLOWED):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = _called_name(node.func)
                if called in BACKEND_CONSTRUCTORS:
                    found.append(f"{name}:{node.lineno} {called}(...)")
    assert found == []


def test_the_scan_sees_a_constructor_outside_the_wiring() -> None:
    # The scanner itself: a module that opened its own index would be found.
    tree = ast.parse("from memstrata.longterm.edge import EdgeIndex\nEdgeIndex('x')\n")
    calls = [_called_name(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls == ["EdgeIndex"]
    assert "EdgeIndex" in BACKEND_CONSTRUCTORS


def _delegates(body: list[ast.stmt]) -> bool:
    """One statement (after the docstring) returning or making one call or attribute
    read, whose arguments are names, constants or calls of the same kind."""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr):
        return False
    value = body[0].value
    return value is not None and _plain(value)


def _plain(node: ast.expr) -> bool:
    if isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        return _plain(node.value)
    if isinstance(node, ast.Call):
        arguments = [*node.args, *(k.value for k in node.keywords)]
        return _plain(node.func) and all(_plain(a) for a in arguments)
    return False


def test_the_engine_only_delegates() -> None:
    tree = _modules()["memstrata.engine"]
    (engine,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [n for n in tree.body if isinstance(n, ast.FunctionDef)] == []
    methods = [n for n in engine.body if isinstance(n, ast.FunctionDef)]
    public = [m for m in methods if not m.name.startswith("_")]
    assert len(public) > 60
    assert [m.name for m in public if not _delegates(m.body)] == []
    (init,) = [m for m in methods if m.name == "__init__"]
    # The constructor only keeps the stack's capability services.
    assert all(isinstance(s, ast.Assign) and _plain(s.value) for s in init.body)


def test_the_delegation_check_refuses_behaviour() -> None:
    behaviour = ast.parse(
        "def f(self, x):\n    '''doc'''\n    if x:\n        return 1\n    return self._a.f(x)\n"
        "def g(self, x):\n    return self._a.f(x + 1)\n"
        "def h(self, x):\n    y = self._a.f(x)\n    return y\n"
        "def k(self, x):\n    '''doc'''\n    return self._a.f(x, key=x)\n"
    )
    verdicts = [_delegates(f.body) for f in behaviour.body if isinstance(f, ast.FunctionDef)]
    assert verdicts == [False, False, False, True]
