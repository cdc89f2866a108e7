"""redis-py failures become memstrata errors that never quote stored content."""

from __future__ import annotations

import redis
import redis.exceptions as rexc

from memstrata.errors import BackendError
from memstrata.working.embedded import EmbeddedValkey
from memstrata.working.redis_errors import describe, redis_errors

SECRET = "card 4111 1111 1111 1111 for alice"


def test_a_failed_pipeline_command_is_reported_without_its_arguments(
    embedded_valkey: EmbeddedValkey,
) -> None:
    client = redis.Redis.from_url(embedded_valkey.url, decode_responses=True)
    try:
        try:
            with redis_errors("redis write"):
                pipe = client.pipeline(transaction=False)
                pipe.set("t:secret", SECRET, px=0)  # an invalid expire: the server refuses
                pipe.execute()
        except BackendError as exc:
            message = str(exc)
        else:  # pragma: no cover - the server must refuse
            raise AssertionError("the pipeline did not fail")
    finally:
        client.close()
    assert SECRET not in message and "4111" not in message
    assert "pipeline command 1 failed" in message and "expire" in message


def test_describe_keeps_the_servers_own_reason() -> None:
    exc = rexc.ResponseError(
        f"Command # 2 (SET k {SECRET} PX 0) of pipeline caused error: invalid expire time"
    )
    assert describe(exc) == "pipeline command 2 failed: invalid expire time"
