"""A write-queue consumer as its own process (stage 4 of the write path, ``consume``,
outside the engine).

::

    python -m memstrata.worker --redis-url unix:///data/valkey.sock \\
        --queue memories --handler mypkg.store:write_batch

``--handler module:callable`` names the handler itself; ``--handler-factory
module:callable`` names a function called once with the ``--handler-arg KEY=VALUE``
pairs as keyword strings that returns the handler (for handlers that need a
connection or a path). What the options leave out (the Redis URL, the queue, batch
size, block and claim times, deliveries, the stream's length) comes from the
deployment's settings (``MEMSTRATA_SETTINGS`` and ``MEMSTRATA_*``), the ones the
engine that enqueues reads; the queue is built by :mod:`memstrata.wiring` as the
engine's is. SIGTERM and SIGINT stop the loop after the current batch; the exit
status is 0 after a clean stop and 2 for bad arguments.

This module is deliberately not imported by :mod:`memstrata.write.consume`, so that
``python -m`` runs it without a double import.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, cast

from memstrata.config import Settings, settings_from_env
from memstrata.errors import ConfigError, MemstrataError
from memstrata.wiring import worker_queue
from memstrata.write.consume import Handler, QueueWorker
from memstrata.write.queue import DEFAULT_GROUP

logger = logging.getLogger("memstrata.worker")


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """Everything a worker process needs, parsed from the command line."""

    redis_url: str
    queue: str
    consumer: str
    handler: str
    factory: bool
    handler_args: Mapping[str, str]
    group: str = DEFAULT_GROUP
    batch_size: int = 100
    block_ms: int = 200
    claim_idle_ms: int = 30_000
    max_deliveries: int = 5
    maxlen: int | None = 100_000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memstrata.worker", description="Drain a memstrata write queue."
    )
    parser.add_argument(
        "--redis-url", help="redis://, unix://, redis+cluster:// (default: the settings')"
    )
    parser.add_argument("--queue", help="queue name (default: the settings' pipeline.queue_name)")
    parser.add_argument("--consumer", required=True, help="consumer name, unique per process")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--handler", help="module:callable, the handler itself")
    target.add_argument("--handler-factory", help="module:callable returning the handler")
    parser.add_argument(
        "--handler-arg", action="append", default=[], metavar="KEY=VALUE",
        help="keyword argument for --handler-factory (repeatable)",
    )  # fmt: skip
    parser.add_argument("--group", default=DEFAULT_GROUP)
    # Unset: the deployment's settings (MEMSTRATA_SETTINGS / MEMSTRATA_* variables), as
    # the engine that enqueues reads them.
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--block-ms", type=int)
    parser.add_argument("--claim-idle-ms", type=int)
    parser.add_argument("--max-deliveries", type=int)
    return parser


def parse_options(argv: Sequence[str], settings: Settings | None = None) -> WorkerOptions:
    """Parse command-line arguments (argparse exits with status 2 on bad ones); what
    they leave out comes from ``settings`` (default: the environment's,
    :func:`memstrata.config.settings_from_env`)."""
    parser = _parser()
    ns = parser.parse_args(list(argv))
    config = settings if settings is not None else settings_from_env()
    pipeline = config.pipeline
    redis_url = ns.redis_url or config.redis_url
    if not redis_url:
        parser.error("--redis-url is required (or redis_url in the settings)")
    pairs: dict[str, str] = {}
    for item in ns.handler_arg:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--handler-arg {item!r}: expected KEY=VALUE")
        pairs[key] = value
    if pairs and ns.handler_factory is None:
        parser.error("--handler-arg needs --handler-factory")
    return WorkerOptions(
        redis_url=redis_url,
        queue=ns.queue or pipeline.queue_name,
        consumer=ns.consumer,
        handler=ns.handler_factory or ns.handler,
        factory=ns.handler_factory is not None,
        handler_args=pairs,
        group=ns.group,
        batch_size=pipeline.batch_size if ns.batch_size is None else ns.batch_size,
        block_ms=pipeline.block_ms if ns.block_ms is None else ns.block_ms,
        claim_idle_ms=pipeline.claim_idle_ms if ns.claim_idle_ms is None else ns.claim_idle_ms,
        max_deliveries=pipeline.max_deliveries if ns.max_deliveries is None else ns.max_deliveries,
        maxlen=pipeline.queue_maxlen,
    )


def load_handler(spec: str, *, factory: bool, args: Mapping[str, str]) -> Handler:
    """Import ``module:callable``; call it with ``args`` first when it is a factory."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"handler: expected module:callable, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"handler: cannot load {spec!r}: {exc}") from exc
    if factory:
        target = target(**args)
    if not callable(target):
        raise ConfigError(f"handler: {spec!r} is not callable")
    return cast(Handler, target)


def build_worker(options: WorkerOptions) -> QueueWorker:
    """Connect and assemble the worker described by ``options``."""
    handler = load_handler(options.handler, factory=options.factory, args=options.handler_args)
    queue = worker_queue(
        options.redis_url,
        options.queue,
        group=options.group,
        block_ms=options.block_ms,
        maxlen=options.maxlen,
    )
    return QueueWorker(
        queue,
        handler,
        options.consumer,
        batch_size=options.batch_size,
        block_ms=options.block_ms,
        claim_idle_ms=options.claim_idle_ms,
        max_deliveries=options.max_deliveries,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a worker until SIGTERM / SIGINT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    options = parse_options(sys.argv[1:] if argv is None else argv)
    try:
        worker = build_worker(options)
    except MemstrataError as exc:
        logger.error("cannot start worker: %s", exc)
        return 2
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    logger.info("worker %s draining queue %s", options.consumer, options.queue)
    worker.run_forever(stop)
    logger.info("worker %s stopped", options.consumer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
