"""A key-value item store with semantic search, for agent frameworks (LangGraph's
``BaseStore`` is :mod:`memstrata.integrations.langgraph`).

Model: an item is ``(namespace, key) -> value`` where the namespace is a tuple of
string labels (``("memories", "alice")``), the key a string and the value a JSON
object. A put of an existing key replaces it (its ``created_at`` is kept); a delete
removes it; a search lists the items under a namespace prefix, filtered on the
value's top-level fields and, with a query, ranked by memstrata's hybrid retrieval.

Where items live: each item is one point of the tenant's L3 ``memories`` collection
(type ``store_item``), so items are persistent (on disk with the embedded defaults,
in Qdrant otherwise), tenant-isolated like every L3 read (the tenant condition is
pushed into the engine), and searchable with the same dense + BM25 hybrid search as
memories. The point id is derived from ``(tenant, namespace, key)``, so a put
replaces in place and a get is one lookup by id. The point's text is what is
indexed: the value's chosen fields (default: the whole value as JSON). Memory reads
never see these points: every read of ``memories`` names the memory types it wants,
and ``store_item`` is none of them.

Safety: the value passes the gateway before it is stored (credentials and PII
redacted, secret-named fields masked), and the indexed text with it. Namespace
labels and keys are identifiers, kept as given like user and session ids; one the
gateway would redact is refused (ValidationError naming it). They are stored
encoded (``store_ref``) so that the gateway's scan of the payload leaves them
intact, and namespace prefixes as digests (``store_prefixes``) so that a prefix
search is one engine filter.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from memstrata.clock import Clock
from memstrata.errors import ValidationError
from memstrata.frozen import thaw
from memstrata.longterm.facade import LongTermStore, NewItem, PayloadSanitizer
from memstrata.longterm.points import MEMORIES, Filter, Record
from memstrata.retrieval.retriever import Retriever
from memstrata.validation import (
    MAX_TEXT_CHARS,
    STORE_LABEL_MAX_CHARS,
    STORE_LABEL_PATTERN,
    check_id,
    is_blank,
)

STORE_TYPE = "store_item"
"""The L3 type of store items (in ``memories``; no memory read asks for it)."""
MAX_LABELS = 32
MAX_LABEL_CHARS = STORE_LABEL_MAX_CHARS
_LABEL_RE = re.compile(STORE_LABEL_PATTERN)
MAX_KEY_CHARS = 1024
MAX_VALUE_BYTES = 256 * 1024
MAX_LIMIT = 1000
MAX_OFFSET = 10_000
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_REF = "store_ref"
_PREFIXES = "store_prefixes"
_VALUE = "store_value"
_INDEXED = "store_indexed"
_ID_SPACE = uuid.UUID("6f1d3c1e-8a43-4f55-9c51-3b0e6a7e5d21")
_LETTERS = "abcdefghijklmnop"


@dataclass(frozen=True, slots=True)
class StoreItem:
    """One stored item; ``score`` is the query's cosine to it (searches with a query)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


# -- validation -------------------------------------------------------------------------


def check_namespace(field: str, namespace: Any, *, allow_empty: bool = False) -> tuple[str, ...]:
    """A namespace: a sequence of 1-32 non-empty string labels (none containing '.')."""
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise ValidationError(field, "must be a sequence of string labels")
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise ValidationError(field, "must have at least one label")
    if len(labels) > MAX_LABELS:
        raise ValidationError(field, f"must have at most {MAX_LABELS} labels")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise ValidationError(field, "labels must be non-empty strings")
        if len(label) > MAX_LABEL_CHARS or not _LABEL_RE.fullmatch(label):
            raise ValidationError(field, f"labels are at most {MAX_LABEL_CHARS} chars, no '.'")
    return labels


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise ValidationError("key", f"must be a string of 1-{MAX_KEY_CHARS} chars")
    return key


def _check_value(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError("value", "must be a JSON object")
    try:
        encoded = json.dumps(value, allow_nan=False)
        # Every answer is encoded by orjson: an integer past 64 bits is refused here,
        # not stored and then unanswerable (a 500 after the write).
        orjson.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError("value", f"must be JSON: {exc}") from None
    if len(encoded.encode()) > MAX_VALUE_BYTES:
        raise ValidationError("value", f"must be at most {MAX_VALUE_BYTES} bytes as JSON")
    plain: dict[str, Any] = json.loads(encoded)
    return plain


def _check_bound(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(field, f"must be an integer in [{low}, {high}]")
    return value


# -- encodings ----------------------------------------------------------------------------


def _letters(data: bytes) -> str:
    """``data`` in the letters a-p (no digit or symbol the gateway could take for one)."""
    return "".join(_LETTERS[b >> 4] + _LETTERS[b & 15] for b in data)


def _unletters(text: str) -> bytes:
    pairs = zip(text[::2], text[1::2], strict=True)
    return bytes((_LETTERS.index(hi) << 4) | _LETTERS.index(lo) for hi, lo in pairs)


def _digest(labels: Sequence[str]) -> str:
    raw = json.dumps(list(labels), ensure_ascii=False).encode()
    return _letters(hashlib.sha256(raw).digest()[:16])


def _point_id(tenant: str, namespace: Sequence[str], key: str) -> str:
    return str(uuid.uuid5(_ID_SPACE, json.dumps([tenant, list(namespace), key])))


def _ref(namespace: Sequence[str], key: str) -> str:
    return _letters(json.dumps([*namespace, key], ensure_ascii=False).encode())


def _stamp(epoch: Any) -> datetime:
    return datetime.fromtimestamp(float(epoch), tz=UTC)


def _item(payload: Mapping[str, Any], score: float | None = None) -> StoreItem:
    *namespace, key = json.loads(_unletters(str(payload[_REF])).decode())
    return StoreItem(
        namespace=tuple(namespace),
        key=key,
        value=dict(thaw(payload[_VALUE])),
        created_at=_stamp(payload["created_at"]),
        updated_at=_stamp(payload["updated_at"]),
        score=score,
    )


# -- indexed text and filters -----------------------------------------------------------------


def _at_path(value: Any, path: str) -> list[Any]:
    """The values at a dotted path (``a.b``; ``a[*]`` or a list on the way fans out)."""
    found = [value]
    for part in path.split("."):
        name = part[:-3] if part.endswith("[*]") else part
        step: list[Any] = []
        for node in found:
            if isinstance(node, Mapping) and name in node:
                child = node[name]
                step.extend(child if isinstance(child, list) else [child])
        found = step
    return found


def indexed_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text embedded for a value: the chosen fields' values, else the whole value."""
    if not fields or "$" in fields:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    parts: list[str] = []
    for path in fields:
        for found in _at_path(value, path):
            parts.append(found if isinstance(found, str) else json.dumps(found, ensure_ascii=False))
    return "\n".join(p for p in parts if p.strip())


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality (objects and lists compared field by
    field), or a dict of operators ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, str(op), operand) for op, operand in wanted.items())
        return isinstance(value, Mapping) and all(
            matches(value.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _check_filter(flt: Any) -> dict[str, Any]:
    if flt is None:
        return {}
    if not isinstance(flt, Mapping):
        raise ValidationError("filter", "must be an object of field -> value")

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for name, child in node.items():
                if str(name).startswith("$") and name not in FILTER_OPERATORS:
                    raise ValidationError("filter", f"unknown operator {name!r}")
                walk(child)
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child)

    walk(flt)
    return dict(flt)


def _namespace_matches(namespace: Sequence[str], pattern: Sequence[str], *, suffix: bool) -> bool:
    if len(namespace) < len(pattern):
        return False
    pairs = (
        zip(reversed(namespace), reversed(pattern), strict=False)
        if suffix
        else zip(namespace, pattern, strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


# -- the store ----------------------------------------------------------------------------------


class ItemStore:
    """Items of every tenant in L3 (see the module docstring)."""

    def __init__(
        self, longterm: LongTermStore, reader: Retriever, sanitizer: PayloadSanitizer, clock: Clock
    ) -> None:
        self._longterm = longterm
        self._reader = reader
        self._sanitizer = sanitizer
        self._clock = clock

    def _record(self, tenant: str, namespace: Sequence[str], key: str) -> Record | None:
        found = self._longterm.get(MEMORIES, [_point_id(tenant, namespace, key)], tenant=tenant)
        return next((r for r in found if r.payload.get("type") == STORE_TYPE), None)

    def _refuse_sensitive(self, tenant: str, labels: Sequence[str], key: str) -> None:
        """Identifiers are stored as given, so one the gateway would redact (a
        credential, an email, a phone number) is refused instead of stored."""
        for i, label in enumerate((*labels, key)):
            field = f"namespace[{i}]" if i < len(labels) else "key"
            if self._sanitizer.text(label, location=f"store:{tenant}", field=field) != label:
                raise ValidationError(
                    field, "holds a credential or personal data; use an opaque id instead"
                )

    def put(
        self,
        tenant: str,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        index: Sequence[str] | bool | None = None,
    ) -> StoreItem:
        """Store ``value`` (after the gateway) under ``(namespace, key)``, replacing any
        item there. ``index``: the value's fields to embed (dotted paths; ``"$"`` or
        None: the whole value), or False to keep the item out of query searches."""
        check_id("tenant", tenant)
        labels = check_namespace("namespace", namespace)
        check_key(key)
        self._refuse_sensitive(tenant, labels, key)
        if isinstance(index, str) or not (index is None or isinstance(index, bool | Sequence)):
            raise ValidationError("index", "must be false, null or a list of field paths")
        clean = self._sanitizer.value(_check_value(value), location=f"store:{tenant}")
        fields = None if index is None or index is True else list(index or ())
        text = "" if index is False else indexed_text(clean, fields)
        indexed = bool(text.strip())
        previous = self._record(tenant, labels, key)
        now = self._clock.now().timestamp()
        created = float(previous.payload["created_at"]) if previous is not None else now
        self._longterm.add(
            MEMORIES,
            [
                NewItem(
                    # A point needs a text: an unindexed item's is its key, never searched.
                    # (A blank key is a valid key but no text: the item's ref stands in.)
                    text=(text if indexed else key if not is_blank(key) else _ref(labels, key))[
                        :MAX_TEXT_CHARS
                    ],
                    tenant=tenant,
                    type=STORE_TYPE,
                    source="store",
                    id=_point_id(tenant, labels, key),
                    created_at=created,
                    updated_at=now,
                    extra={
                        _REF: _ref(labels, key),
                        _PREFIXES: [_digest(labels[:n]) for n in range(1, len(labels) + 1)],
                        _VALUE: clean,
                        _INDEXED: 1 if indexed else 0,
                    },
                )
            ],
        )
        return StoreItem(labels, key, dict(clean), _stamp(created), _stamp(now))

    def get(self, tenant: str, namespace: Sequence[str], key: str) -> StoreItem | None:
        """The item at ``(namespace, key)`` of ``tenant``, or None."""
        check_id("tenant", tenant)
        labels = check_namespace("namespace", namespace)
        record = self._record(tenant, labels, check_key(key))
        return None if record is None else _item(record.payload)

    def delete(self, tenant: str, namespace: Sequence[str], key: str) -> bool:
        """Delete the item; whether there was one."""
        check_id("tenant", tenant)
        labels = check_namespace("namespace", namespace)
        if self._record(tenant, labels, check_key(key)) is None:
            return False
        self._longterm.delete(MEMORIES, [_point_id(tenant, labels, key)], tenant=tenant)
        return True

    def namespace_filter(self, tenant: str, namespace_prefix: Sequence[str]) -> Filter:
        """The engine filter of every item under ``namespace_prefix`` (non-empty: a
        whole tenant's store is never one mistyped call away)."""
        check_id("tenant", tenant)
        return self._filter(tenant, check_namespace("namespace_prefix", namespace_prefix))

    def _filter(self, tenant: str, prefix: Sequence[str], *, indexed: bool = False) -> Filter:
        extras: list[tuple[str, str | int]] = []
        if prefix:
            extras.append((_PREFIXES, _digest(prefix)))
        if indexed:
            extras.append((_INDEXED, 1))
        return Filter(tenant=tenant, types=(STORE_TYPE,), extras=tuple(extras))

    def search(
        self,
        tenant: str,
        namespace_prefix: Sequence[str] = (),
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[StoreItem]:
        """Items under ``namespace_prefix`` whose value matches ``filter``.

        With ``query``: ranked by hybrid search (dense and BM25 routes fused by RRF),
        each with its cosine to the query as ``score``; items put with ``index=False``
        are left out. Without: the most recently updated first.
        """
        check_id("tenant", tenant)
        prefix = check_namespace("namespace_prefix", namespace_prefix, allow_empty=True)
        wanted = _check_filter(filter)
        limit = _check_bound("limit", limit, 1, MAX_LIMIT)
        offset = _check_bound("offset", offset, 0, MAX_OFFSET)
        if query is not None and not (isinstance(query, str) and query.strip()):
            raise ValidationError("query", "must be a non-empty string or null")

        def keep(payload: Mapping[str, Any]) -> bool:
            value = payload.get(_VALUE)
            return isinstance(value, Mapping) and all(
                matches(value.get(name), want) for name, want in wanted.items()
            )

        if query is None:
            records = [
                r
                for r in self._longterm.iter_records(MEMORIES, self._filter(tenant, prefix))
                if keep(r.payload)
            ]
            records.sort(key=lambda r: (-float(r.payload["updated_at"]), r.id))
            return [_item(r.payload) for r in records[offset : offset + limit]]
        return self._ranked(tenant, prefix, query, keep, limit, offset)

    def _ranked(
        self,
        tenant: str,
        prefix: Sequence[str],
        query: str,
        keep: Any,
        limit: int,
        offset: int,
    ) -> list[StoreItem]:
        flt = self._filter(tenant, prefix, indexed=True)
        page = self._reader.ranked_page(MEMORIES, query, flt, keep, limit=limit, offset=offset)
        return [_item(point.payload, score=_finite(point.score)) for point in page]

    def list_namespaces(
        self,
        tenant: str,
        *,
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted; ``prefix`` / ``suffix`` may hold the
        wildcard ``*``; ``max_depth`` cuts longer namespaces to that many labels."""
        check_id("tenant", tenant)
        start = check_namespace("prefix", prefix or (), allow_empty=True)
        end = check_namespace("suffix", suffix or (), allow_empty=True)
        if max_depth is not None:
            _check_bound("max_depth", max_depth, 1, MAX_LABELS)
        limit = _check_bound("limit", limit, 1, MAX_LIMIT)
        offset = _check_bound("offset", offset, 0, MAX_OFFSET)
        exact = start if "*" not in start else ()
        seen: set[tuple[str, ...]] = set()
        for record in self._longterm.iter_records(MEMORIES, self._filter(tenant, exact)):
            namespace = _item(record.payload).namespace
            if start and not _namespace_matches(namespace, start, suffix=False):
                continue
            if end and not _namespace_matches(namespace, end, suffix=True):
                continue
            seen.add(namespace[:max_depth] if max_depth is not None else namespace)
        return sorted(seen)[offset : offset + limit]


def _finite(score: float) -> float:
    return float(score) if math.isfinite(score) else 0.0
