"""The service of a data directory in this process, acting as its local user.

``memstrata mcp`` over stdio and the CLI's commands without ``--url`` go through the
capability table like a remote caller, with no key: the :class:`Service` over the
engine opened on the data directory acts as the local caller of one tenant (an admin,
who owns the directory: its session ids are the engine's own, unprefixed, and as
the operator's tenant it may consolidate every tenant).
"""

from __future__ import annotations

from memstrata.clock import SystemClock
from memstrata.engine import ContextEngine
from memstrata.service.auth import Caller
from memstrata.service.capability import LOCAL_KEY_ID
from memstrata.service.core import Service

__all__ = ["LOCAL_KEY_ID", "local_caller", "local_service"]


def local_caller(tenant: str, agent: str = "local") -> Caller:
    """The local user of ``tenant``: an admin without a key (names checked by the caller)."""
    return Caller(LOCAL_KEY_ID, tenant, agent, "admin")


def local_service(engine: ContextEngine, caller: Caller) -> Service:
    """The service over ``engine`` that serves every call as ``caller``."""
    return Service(engine, None, SystemClock(), local_caller=caller)
