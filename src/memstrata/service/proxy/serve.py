"""``memstrata proxy``: the proxy alone, over the same engine and data directory
setup as ``memstrata serve`` (the key store, ``admin.key`` on the first start)."""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

from memstrata.config import Settings
from memstrata.errors import ConfigError

log = logging.getLogger("memstrata.proxy")


def with_upstream(settings: Settings, upstream: str | None) -> Settings:
    """``settings`` with ``--upstream`` (when given) as the proxy's upstream."""
    if upstream is None:
        return settings
    return dataclasses.replace(
        settings, proxy=dataclasses.replace(settings.proxy, upstream=upstream)
    )


def run_proxy(
    settings: Settings, host: str, port: int, *, ready: threading.Event | None = None
) -> None:
    """Serve ``POST /v1/chat/completions`` on ``host:port`` until SIGTERM or SIGINT."""
    import uvicorn

    from memstrata.service.proxy.routes import create_proxy_app
    from memstrata.service.server import disk_policy_from_env, open_service, stop_signals
    from memstrata.service.startup import Port, bind, check_data_dir

    if settings.proxy.upstream is None:
        raise ConfigError("proxy.upstream: required (memstrata proxy --upstream URL)")
    check_data_dir(Path(settings.data_dir))
    socket = bind(Port("proxy", "--port", host, port))
    try:
        with stop_signals():
            running = open_service(settings, disk=disk_policy_from_env())
            try:
                running.engine.warm()
                if running.admin_key_file is not None:
                    log.warning(
                        "no API key existed: an admin key was written to %s",
                        running.admin_key_file,
                    )
                app = create_proxy_app(running.service, settings.proxy)
                config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
                server = uvicorn.Server(config)
                bound = int(socket.getsockname()[1])
                log.warning(
                    "memstrata proxy on http://%s:%d/v1 forwarding to %s",
                    host, bound, settings.proxy.upstream,
                )  # fmt: skip
                if ready is not None:
                    ready.set()
                server.run(sockets=[socket])
            finally:
                running.close()
    finally:
        socket.close()
