"""The service of a data directory in this process, acting as its local user.

``memstrata mcp`` over stdio and the CLI's commands without ``--url`` go through the
capability table like a remote caller, with no key: the :class:`Service` over the
engine opened on the data directory acts as the local caller of one tenant (an admin).
"""

from __future__ import annotations

from memstrata.clock import SystemClock
from memstrata.engine import ContextEngine
from memstrata.service.auth import Caller
from memstrata.service.core import Service

LOCAL_KEY_ID = "local"


def local_caller(tenant: str, agent: str = "local") -> Caller:
    """The local user of ``tenant``: an admin without a key (names checked by the caller)."""
    return Caller(LOCAL_KEY_ID, tenant, agent, "admin")


def local_service(engine: ContextEngine, caller: Caller) -> Service:
    """The service over ``engine`` that serves every call as ``caller``."""
    return Service(engine, None, SystemClock(), local_caller=caller)
