"""gRPC: ``memstrata.v1.Memstrata``, one unary method per operation, with reflection.

The API key travels in the ``authorization`` (``Bearer <key>``) or ``x-api-key``
metadata, and is verified before the request message is parsed: without a valid key
the answer is ``UNAUTHENTICATED``, whatever the message. An error aborts the call
with the error table's gRPC code and, as the details string, the JSON error body
(code, type, message, field, reason).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_reflection.v1alpha import reflection

from memstrata.errors import MemstrataError, ValidationError, error_code
from memstrata.service.core import Service, bearer_key, error_body
from memstrata.service.operations import BY_NAME, OPERATIONS, Operation
from memstrata.service.proto import POOL, SERVICE_FULL_NAME, message_class, method_name
from memstrata.service.wire import dump

log = logging.getLogger("memstrata.service")
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def to_message(model: Any) -> Message:
    """A wire model as its protobuf message."""
    return json_format.ParseDict(dump(model), message_class(type(model))())


def from_message(message: Message) -> dict[str, Any]:
    """A protobuf message as the JSON-ready dict of its model (unset fields left out)."""
    data: dict[str, Any] = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    return data


def _request_data(op: Operation[Any, Any], request: Message) -> dict[str, Any]:
    """A request message as its model's input: proto3 cannot tell an empty repeated
    field from an absent one, so an empty list or map of an optional field is absent."""
    data = from_message(request)
    fields = op.request.model_fields
    return {
        name: value
        for name, value in data.items()
        if not (value in ([], {}) and name in fields and not fields[name].is_required())
    }


def _handler(service: Service, op: Operation[Any, Any]) -> Callable[[bytes, Any], Message]:
    parse = _deserializer(op)

    def handle(request: bytes, context: grpc.ServicerContext) -> Message:
        metadata = {k.lower(): v for k, v in context.invocation_metadata() if isinstance(v, str)}
        try:
            # The key first: the message is parsed only for a caller known good.
            caller = service.admit(op.name, bearer_key(metadata), "grpc")
            result = service.call(
                op.name, None, _request_data(op, parse(request)), transport="grpc", caller=caller
            )
            return to_message(result)
        except MemstrataError as exc:
            context.abort(
                getattr(grpc.StatusCode, error_code(exc).grpc), json.dumps(error_body(exc))
            )
        except Exception as exc:
            log.exception("unexpected error serving a gRPC call")
            context.abort(grpc.StatusCode.INTERNAL, json.dumps(error_body(exc)))
        raise AssertionError("unreachable: context.abort raises")

    return handle


def _deserializer(op: Operation[Any, Any]) -> Callable[[bytes], Message]:
    cls = message_class(op.request)

    def parse(data: bytes) -> Message:
        try:
            return cls.FromString(data)
        except Exception as exc:  # a malformed message is the caller's error
            raise ValidationError("request", "is not a valid protobuf message") from exc

    return parse


def add_service(server: grpc.Server, service: Service) -> None:
    """Register every operation and server reflection on ``server``."""
    handlers = {
        # No request deserializer: the handler gets the bytes and parses them itself,
        # after the key (grpc would parse before any handler runs).
        method_name(op.name): grpc.unary_unary_rpc_method_handler(
            _handler(service, op),
            response_serializer=lambda message: message.SerializeToString(),
        )
        for op in OPERATIONS
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE_FULL_NAME, handlers),)
    )
    reflection.enable_server_reflection(
        (SERVICE_FULL_NAME, reflection.SERVICE_NAME), server, pool=POOL
    )


def create_server(service: Service, address: str, *, threads: int = 16) -> tuple[grpc.Server, int]:
    """A started-ready gRPC server bound to ``address`` (``host:0`` picks a port)."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix="memstrata-grpc"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    add_service(server, service)
    port = server.add_insecure_port(address)
    return server, port


class GrpcClient:
    """A small typed caller of the service (tests and ``memstrata.client``)."""

    def __init__(self, target: str, key: str | None = None) -> None:
        self._channel = grpc.insecure_channel(target)
        self._metadata = (("authorization", f"Bearer {key}"),) if key else ()
        self._stubs: dict[str, Callable[..., Message]] = {}
        for op in OPERATIONS:
            self._stubs[op.name] = self._channel.unary_unary(
                f"/{SERVICE_FULL_NAME}/{method_name(op.name)}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=message_class(op.response).FromString,
            )

    def call(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        op = BY_NAME[name]
        request = json_format.ParseDict(payload, message_class(op.request)())
        reply = from_message(self._stubs[name](request, metadata=self._metadata))
        # Through the model: int64 fields arrive as JSON strings.
        return dump(op.response.model_validate(reply))

    def close(self) -> None:
        self._channel.close()
