"""What the agent tests share: everything an engine keeps in Valkey, as text, to look
for secrets."""

from __future__ import annotations

from memstrata import ContextEngine
from memstrata.testing.disk import valkey_entries
from memstrata.working import RedisBackend


def valkey_dump(engine: ContextEngine) -> str:
    """Every key of the engine's Valkey with its value, whatever its type."""
    backend = engine.parts.working_memory.backend
    assert isinstance(backend, RedisBackend)
    return "\n".join(f"{k} {v}" for k, v in sorted(valkey_entries(backend.client).items()))
