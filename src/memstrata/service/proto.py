"""The gRPC schema, derived from the wire models: descriptors, message classes, .proto text.

``memstrata.v1.Memstrata`` has one unary method per operation (``start_session`` is
``StartSession``), taking and returning messages with the models' field names and
types. The descriptors are built here at import, not compiled by protoc; the
``.proto`` file in the repository (``proto/memstrata/v1/memstrata.proto``) is
:func:`proto_text` of the same descriptors, and a test keeps the two equal.

Type mapping: str, datetime (RFC 3339) and Literal -> string; int -> int64;
float -> double; bool -> bool; a model -> its message; ``list[X]`` -> repeated X;
``dict[str, str]`` -> map<string, string>; ``JsonValue`` -> google.protobuf.Value;
``dict[str, JsonValue]`` -> google.protobuf.Struct. Scalars with a default or None
are ``optional`` (explicit presence), so an unset field takes the model's default.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2
from google.protobuf.message import Message
from pydantic import BaseModel, JsonValue

from memstrata.service.operations import OPERATIONS, Operation

PACKAGE = "memstrata.v1"
SERVICE = "Memstrata"
SERVICE_FULL_NAME = f"{PACKAGE}.{SERVICE}"
PROTO_FILE = "memstrata/v1/memstrata.proto"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS: dict[Any, int] = {
    str: _F.TYPE_STRING,
    datetime: _F.TYPE_STRING,
    int: _F.TYPE_INT64,
    float: _F.TYPE_DOUBLE,
    bool: _F.TYPE_BOOL,
}
_SCALAR_NAMES = {
    _F.TYPE_STRING: "string",
    _F.TYPE_INT64: "int64",
    _F.TYPE_DOUBLE: "double",
    _F.TYPE_BOOL: "bool",
}


def method_name(operation: str) -> str:
    """``start_session`` -> ``StartSession``."""
    return "".join(part.capitalize() for part in operation.split("_"))


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the type without Annotated/Optional, whether None was allowed)."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != len(typing.get_args(annotation)):
                optional = True
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation, optional


@dataclass(frozen=True, slots=True)
class _FieldType:
    kind: int
    type_name: str = ""
    repeated: bool = False
    map_value: int | None = None  # a map<string, scalar>


def _field_type(annotation: Any) -> _FieldType:
    base, _ = _unwrap(annotation)
    if base is JsonValue or base is Any:
        return _FieldType(_F.TYPE_MESSAGE, ".google.protobuf.Value")
    origin = typing.get_origin(base)
    if origin is Literal:
        return _FieldType(_F.TYPE_STRING)
    if origin is list:
        inner = _field_type(typing.get_args(base)[0])
        return _FieldType(inner.kind, inner.type_name, repeated=True)
    if origin is dict:
        _, value = typing.get_args(base)
        value_base, _ = _unwrap(value)
        if value_base is JsonValue or value_base is Any:
            return _FieldType(_F.TYPE_MESSAGE, ".google.protobuf.Struct")
        if value_base in _SCALARS:
            return _FieldType(_F.TYPE_MESSAGE, repeated=True, map_value=_SCALARS[value_base])
        raise TypeError(f"unsupported map value type {value!r}")
    if isinstance(base, type) and issubclass(base, BaseModel):
        return _FieldType(_F.TYPE_MESSAGE, f".{PACKAGE}.{base.__name__}")
    if base in _SCALARS:
        return _FieldType(_SCALARS[base])
    raise TypeError(f"unsupported field type {annotation!r}")


def _models(operations: Sequence[Operation[Any, Any]]) -> list[type[BaseModel]]:
    """Every model the operations use, dependencies first, each once."""
    seen: dict[str, type[BaseModel]] = {}

    def visit(model: type[BaseModel]) -> None:
        if model.__name__ in seen:
            if seen[model.__name__] is not model:
                raise TypeError(f"two wire models are named {model.__name__}")
            return
        seen[model.__name__] = model
        for field in model.model_fields.values():
            for inner in _nested_models(field.annotation):
                visit(inner)

    for op in operations:
        visit(op.request)
        visit(op.response)
    return list(seen.values())


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    base, _ = _unwrap(annotation)
    if isinstance(base, type) and issubclass(base, BaseModel):
        yield base
    for arg in typing.get_args(base):
        yield from _nested_models(arg)


def _message(model: type[BaseModel]) -> descriptor_pb2.DescriptorProto:
    message = descriptor_pb2.DescriptorProto(name=model.__name__)
    for number, (name, field) in enumerate(model.model_fields.items(), start=1):
        kind = _field_type(field.annotation)
        proto = message.field.add(name=name, number=number, json_name=name)
        if kind.map_value is not None:
            entry_name = "".join(p.capitalize() for p in name.split("_")) + "Entry"
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
            entry.field.add(name="value", number=2, type=kind.map_value, label=_F.LABEL_OPTIONAL)
            proto.type = _F.TYPE_MESSAGE
            proto.type_name = f".{PACKAGE}.{model.__name__}.{entry_name}"
            proto.label = _F.LABEL_REPEATED
            continue
        proto.type = kind.kind
        if kind.type_name:
            proto.type_name = kind.type_name
        if kind.repeated:
            proto.label = _F.LABEL_REPEATED
            continue
        proto.label = _F.LABEL_OPTIONAL
        has_default = not field.is_required()
        if kind.kind != _F.TYPE_MESSAGE and has_default:
            proto.proto3_optional = True
            proto.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{name}")
    return message


def file_descriptor(
    operations: Sequence[Operation[Any, Any]] = OPERATIONS,
) -> descriptor_pb2.FileDescriptorProto:
    """The .proto of the service, as a descriptor."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name=PROTO_FILE,
        package=PACKAGE,
        syntax="proto3",
        dependency=["google/protobuf/struct.proto"],
    )
    for model in sorted(_models(operations), key=lambda m: m.__name__):
        fdp.message_type.append(_message(model))
    service = fdp.service.add(name=SERVICE)
    for op in operations:
        service.method.add(
            name=method_name(op.name),
            input_type=f".{PACKAGE}.{op.request.__name__}",
            output_type=f".{PACKAGE}.{op.response.__name__}",
        )
    return fdp


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(file_descriptor().SerializeToString())
    return pool


POOL = _pool()


def message_class(model: type[BaseModel]) -> type[Message]:
    """The protobuf class of a wire model."""
    cls: type[Message] = message_factory.GetMessageClass(
        POOL.FindMessageTypeByName(f"{PACKAGE}.{model.__name__}")
    )
    return cls


def _type_text(field: descriptor_pb2.FieldDescriptorProto, message: Any) -> str:
    if field.type == _F.TYPE_MESSAGE:
        name = str(field.type_name)
        for nested in message.nested_type:
            if nested.options.map_entry and name.endswith(f".{nested.name}"):
                value: str = _SCALAR_NAMES[nested.field[1].type]
                return f"map<string, {value}>"
        return name.removeprefix(f".{PACKAGE}.").removeprefix(".")
    scalar: str = _SCALAR_NAMES[field.type]
    return scalar


def proto_text(fdp: descriptor_pb2.FileDescriptorProto | None = None) -> str:
    """The descriptor as a .proto source file."""
    fdp = fdp or file_descriptor()
    lines = [
        "// Generated from memstrata.service.wire: python -m memstrata.service.proto > this file",
        "// Do not edit: tests/service check it equals what the code serves.",
        'syntax = "proto3";',
        "",
        f"package {fdp.package};",
        "",
        *(f'import "{dep}";' for dep in fdp.dependency),
        "",
    ]
    for service in fdp.service:
        lines.append(f"service {service.name} {{")
        for method in service.method:
            request = method.input_type.removeprefix(f".{PACKAGE}.")
            response = method.output_type.removeprefix(f".{PACKAGE}.")
            lines.append(f"  rpc {method.name}({request}) returns ({response});")
        lines.extend(["}", ""])
    for message in fdp.message_type:
        lines.append(f"message {message.name} {{")
        for field in message.field:
            type_text = _type_text(field, message)
            label = ""
            if field.label == _F.LABEL_REPEATED and not type_text.startswith("map<"):
                label = "repeated "
            elif field.proto3_optional:
                label = "optional "
            lines.append(f"  {label}{type_text} {field.name} = {field.number};")
        lines.extend(["}", ""])
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the checked-in .proto
    import sys

    sys.stdout.write(proto_text())
