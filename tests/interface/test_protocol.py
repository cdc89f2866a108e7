"""The engine and the clients are one interface (:mod:`memstrata.interface`): the same
operation names, parameters and result shapes - checked by mypy and, here, at run time
with ``inspect.signature`` (issue 34: 18 of 53 names differed, and their types)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.client import AsyncClient, Client
from memstrata.engine import ContextEngine
from memstrata.interface import AsyncMemory, Memory
from memstrata.service.client_shape import SHAPES

ROOT = Path(__file__).parents[2]
CLIENT_ONLY = {
    # L2 working memory: the engine's ``working(session_id)`` object holds these.
    "put_api_response",
    "get_api_response",
    "put_step_result",
    "get_step_result",
    "append_series",
    "read_series",
    "add_pending",
    "complete_pending",
    # The service's own keys (the engine has no keys).
    "create_key",
    "revoke_key",
    "list_keys",
}
"""Client methods with no engine twin, by design."""


def operations(protocol: type) -> list[str]:
    return sorted(
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(value)
    )


def conformance(
    protocol_method: Callable[..., Any], implementation: Callable[..., Any]
) -> list[str]:
    """Why ``implementation`` cannot be called as ``protocol_method`` is (empty: it can)."""
    wanted = list(inspect.signature(protocol_method).parameters.values())[1:]
    given = list(inspect.signature(implementation).parameters.values())[1:]
    by_name = {p.name: p for p in given}
    problems: list[str] = []
    used: set[str] = set()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for index, p in enumerate(wanted):
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            found = given[index] if index < len(given) else None
            if found is None or found.kind not in positional:
                problems.append(f"{p.name}: no positional parameter at {index}")
                continue
        else:
            found = by_name.get(p.name)
            if found is None:
                problems.append(f"{p.name}: missing")
                continue
            if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and (
                found.kind is not p.kind or given.index(found) != index
            ):
                problems.append(f"{p.name}: not positional at {index}")
            if found.kind not in (*positional, inspect.Parameter.KEYWORD_ONLY):
                problems.append(f"{p.name}: is {found.kind}")
        if p.default is not inspect.Parameter.empty and found.default is inspect.Parameter.empty:
            problems.append(f"{p.name}: optional here, required there")
        used.add(found.name)
    problems += [
        f"{p.name}: required but not in the interface"
        for p in given
        if p.name not in used
        and p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    return problems


@pytest.mark.parametrize("implementation", [ContextEngine, Client], ids=["engine", "client"])
def test_every_operation_of_memory_has_one_signature(implementation: type) -> None:
    mismatches = {
        name: why
        for name in operations(Memory)
        if (
            why := ["not a method"]
            if not callable(getattr(implementation, name, None))
            else conformance(getattr(Memory, name), getattr(implementation, name))
        )
    }
    assert mismatches == {}


def test_the_async_interface_is_the_sync_one_awaited() -> None:
    sync = operations(Memory)
    assert operations(AsyncMemory) == sorted(n if n != "close" else "aclose" for n in sync)
    for name in sync:
        twin = "aclose" if name == "close" else name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, twin)), twin
        assert str(inspect.signature(getattr(AsyncMemory, twin))) == str(
            inspect.signature(getattr(Memory, name))
        )
        assert conformance(getattr(AsyncMemory, twin), getattr(AsyncClient, twin)) == []


def test_the_engine_and_the_client_name_each_shared_operation_alike() -> None:
    """Every client method is an engine method of the same name, a deprecated alias, or
    one of the few operations the engine keeps elsewhere (``working()``, keys)."""
    aliases = {op for op, shape in SHAPES.items() if shape.name}
    client = {n for n in dir(Client) if not n.startswith("_") and callable(getattr(Client, n))}
    engine = {n for n in dir(ContextEngine) if not n.startswith("_")}
    assert sorted(client - engine - aliases - CLIENT_ONLY) == []
    assert set(operations(Memory)) <= client & engine


def test_an_old_client_name_still_works_and_says_it_is_deprecated() -> None:
    class Recording:
        def __init__(self) -> None:
            self.sent: list[str] = []

        def send(self, operation: str, request: Any, response: Any) -> Any:
            self.sent.append(operation)
            return response.model_validate({"tools": []})

        def close(self) -> None:
            pass

        def aclose(self) -> None:
            pass

    transport = Recording()
    client = Client(transport=transport)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = client.list_tools()
    assert old.tools == [] and client.tools() == []
    assert transport.sent == ["list_tools", "list_tools"]
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "use tools()" in str(caught[0].message)


def test_mypy_accepts_the_engine_and_the_clients_as_the_interface() -> None:
    """The static half: mypy (strict, the project's settings) on a module assigning
    ContextEngine and Client to Memory and AsyncClient to AsyncMemory."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", str(Path(__file__).with_name("static_conformance.py"))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]


def test_connect_gives_a_client_for_a_url_and_the_engine_for_a_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.interface import connect

    monkeypatch.delenv("MEMSTRATA_URL", raising=False)
    remote = connect("http://127.0.0.1:9", key="k")
    assert isinstance(remote, Client) and isinstance(remote, Memory)
    remote.close()
    local = connect(data_dir=tmp_path / "data")
    try:
        assert isinstance(local, ContextEngine) and isinstance(local, Memory)
        assert local.settings.data_dir == tmp_path / "data"
        assert local.start_session("u", "hi", session_id="s1").session_id == "s1"
    finally:
        local.close()
