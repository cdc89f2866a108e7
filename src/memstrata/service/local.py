"""The service of a data directory in this process, acting as its local user.

``memstrata mcp`` over stdio and the CLI's commands without ``--url`` go through the
capability table like a remote caller, with no key: the :class:`Service` over the
engine opened on the data directory acts as the local caller of one tenant (an admin,
who owns the directory: its session ids are the engine's own, unprefixed, and as
the operator's tenant it may consolidate every tenant).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import TYPE_CHECKING, Any, cast

from memstrata.config import Settings
from memstrata.errors import BackendUnavailableError
from memstrata.service.auth import LOCAL_KEY_ID, Caller

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel

    from memstrata.engine import ContextEngine
    from memstrata.service.core import Service

log = logging.getLogger("memstrata.service")

__all__ = ["LOCAL_KEY_ID", "local_caller", "local_service"]


def local_caller(tenant: str, agent: str = "local") -> Caller:
    """The local user of ``tenant``: an admin without a key (names checked by the caller)."""
    return Caller(LOCAL_KEY_ID, tenant, agent, "admin")


def local_service(engine: ContextEngine, caller: Caller) -> Service:
    """The service over ``engine`` that serves every call as ``caller``."""
    from memstrata.clock import SystemClock
    from memstrata.service.core import Service

    return Service(engine, None, SystemClock(), local_caller=caller)


class StartingLocalService:
    """The local service of ``settings``' data directory, opened in a thread while the
    transport already answers (``memstrata mcp``: ``initialize`` and ``tools/list``
    need no engine). A call waits until the engine is open; if it failed to open, every
    call raises :class:`BackendUnavailableError` naming why (and stderr says it once).

    It stands in for a :class:`Service` where a transport calls only :meth:`admit` and
    :meth:`call` (the MCP server does).
    """

    def __init__(self, settings: Settings, caller: Caller) -> None:
        self._settings = settings
        self._caller = caller
        self._opened = threading.Event()
        self._engine: ContextEngine | None = None
        self._service: Service | None = None
        self._failure: str | None = None
        self._thread = threading.Thread(target=self._open, name="memstrata-start", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            from memstrata.engine import ContextEngine

            self._engine = ContextEngine.open(self._settings)
            self._service = local_service(self._engine, self._caller)
        except Exception as exc:
            from memstrata.service.startup import as_failure

            failure = as_failure(exc)
            self._failure = failure.line()
            sys.stderr.write(failure.line() + "\n")
            log.debug("the engine did not open", exc_info=True)
        finally:
            self._opened.set()

    @property
    def ready(self) -> bool:
        return self._opened.is_set() and self._service is not None

    def as_service(self) -> Service:
        """This object typed as the :class:`Service` it stands in for."""
        return cast("Service", self)

    def admit(self, name: str, presented_key: str | None, transport: str) -> Caller:
        return self._caller  # the local user: no key, nothing to wait for

    def call(
        self,
        name: str,
        presented_key: str | None,
        payload: BaseModel | Mapping[str, Any],
        transport: str = "inprocess",
        *,
        caller: Caller | None = None,
    ) -> BaseModel:
        self._opened.wait()
        if self._service is None:
            raise BackendUnavailableError(self._failure or "the engine did not open")
        return self._service.call(name, presented_key, payload, transport, caller=caller)

    def close(self) -> None:
        self._opened.wait()
        if self._engine is not None:
            self._engine.close()
