"""The sanitizing gateway: every write into L1/L2/L3 and every log line passes here.

Credentials become typed placeholders (``[REDACTED:api_key]``) and are never kept
in any form; PII is redacted, masked or allowed as the :class:`FieldPolicy` says;
each redaction is reported to an :class:`AuditSink` without its value.
Sanitizing is idempotent: placeholders and masked hints are never detected again.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from memstrata.clock import Clock, SystemClock
from memstrata.errors import ValidationError
from memstrata.gateway.audit import AuditEvent, AuditSink
from memstrata.gateway.checks import embedded_numbers, mask_digits, mask_email
from memstrata.gateway.kinds import PLACEHOLDER_RE, Kind, Match, key_kind, placeholder
from memstrata.gateway.policy import Action, FieldPolicy
from memstrata.gateway.scan import find_matches

# Hints kept by MASK, per kind. Credentials never reach these: the policy refuses it.
_MASKERS: Mapping[Kind, Callable[[str], str]] = MappingProxyType(
    {
        Kind.EMAIL: mask_email,
        Kind.PHONE: lambda s: mask_digits(s, keep_head=3, keep_tail=4),
        Kind.CN_ID: lambda s: mask_digits(s, keep_head=4, keep_tail=4),
        Kind.BANK_CARD: lambda s: mask_digits(s, keep_head=4, keep_tail=4),
    }
)

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Redaction:
    """One replaced span: kind, what was done, where (``$`` for plain text), offset, length."""

    kind: Kind
    action: Action
    field_path: str
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class SanitizedText:
    """A sanitized string and what was replaced in it (offsets refer to the input)."""

    text: str
    redactions: tuple[Redaction, ...]

    @property
    def changed(self) -> bool:
        """True if anything was redacted or masked."""
        return bool(self.redactions)


@dataclass(frozen=True, slots=True)
class SanitizedValue:
    """A sanitized JSON-like value (a new object) and what was replaced in it."""

    value: Any
    redactions: tuple[Redaction, ...]

    @property
    def changed(self) -> bool:
        """True if anything was redacted or masked."""
        return bool(self.redactions)


_KEY_PLANS_MAX = 4096


@dataclass(frozen=True, slots=True)
class _KeyPlan:
    """What the policy does with a clean mapping key's value."""

    secret: Kind | None
    whole: bool
    governing: str | None


def _child_path(path: str, key: str) -> str:
    if _IDENT_RE.fullmatch(key):
        return f"{path}.{key}"
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{escaped}"]'


def _check_location(location: Any) -> str:
    if not isinstance(location, str):
        raise ValidationError("location", f"must be a string, got {type(location).__name__}")
    if not location.strip():
        raise ValidationError("location", "must not be empty")
    return location


def _strings(obj: Any, max_depth: int, depth: int = 0) -> Iterator[str]:
    """Every string of a JSON-like value (keys included), depth-first."""
    if depth > max_depth:
        raise ValidationError("$", f"nested deeper than {max_depth} levels")
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for key, item in obj.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item, max_depth, depth + 1)
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from _strings(item, max_depth, depth + 1)


def _compact(text: str) -> str:
    """Letters and digits only, NFKC, lowercased: a value however it is spaced or cased."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


_MIN_COMPACT = 4


_MIN_PART = 6
_MIN_WORD = 3
_MAX_PART_CHARS = 512


class _Findings:
    """What a record's texts were found to hold, to be removed from its other fields."""

    def __init__(self, found: Mapping[str, Kind], spans: Sequence[tuple[str, Match]]) -> None:
        # Longest first, so a value never leaves a tail of a longer one behind.
        self._exact = sorted(found.items(), key=lambda item: -len(item[0]))
        self._compact = [
            (c, kind) for value, kind in self._exact if len(c := _compact(value)) >= _MIN_COMPACT
        ]
        self._spans = spans

    def _kind_of_part(self, text: str) -> Kind | None:
        """The kind of a finding ``text`` is part of or overlaps: where it stands in a
        text a finding was read from ("https://admin:pw" cut out of a URL), or its
        compact form inside a finding's ("555-0199" of "(415) 555-0199")."""
        if len(text.strip()) >= _MIN_WORD:
            for source, match in self._spans:
                at = source.find(text)
                while at != -1:
                    end = at + len(text)
                    # A word or phrase of the source (not letters inside a longer word:
                    # the "id" of "Liquid9") that overlaps what was found there.
                    bounded = (at == 0 or not source[at - 1].isalnum()) and (
                        end == len(source) or not source[end].isalnum()
                    )
                    if bounded and at < match.end and match.start < end:
                        return match.kind
                    at = source.find(text, at + 1)
        compact = _compact(text)
        if len(compact) >= _MIN_PART:
            for value, kind in self._compact:
                if compact in value:
                    return kind
        return None

    def scrub(self, text: str, path: str, out: list[Redaction]) -> str:
        for value, kind in self._exact:
            if value in text:
                out.append(Redaction(kind, Action.REDACT, path, text.find(value), len(value)))
                text = text.replace(value, placeholder(kind))
        if self._compact:
            compact = _compact(text)
            for value, kind in self._compact:
                if value in compact:
                    out.append(Redaction(kind, Action.REDACT, path, 0, len(text)))
                    return placeholder(kind)
        if len(text) <= _MAX_PART_CHARS and not PLACEHOLDER_RE.fullmatch(text):
            part = self._kind_of_part(text)
            if part is not None:
                out.append(Redaction(part, Action.REDACT, path, 0, len(text)))
                return placeholder(part)
        return text


_CLEAN_CACHE_ENTRIES = 4096
_MAX_ROUNDS = 3
# How far around a replacement a cue or a value it changed the reading of can stand.
_NEAR = 120


def _has_finding(text: str) -> bool:
    """Whether a stretch of text holds any finding at all (a trigger, not a verdict)."""
    return bool(find_matches(text))


_CLEAN_CACHE_MAX_CHARS = 4096


class Sanitizer:
    """Replaces credentials and PII in text and JSON-like values.

    ``policy`` defaults to redacting everything; ``audit`` (optional) receives one
    :class:`AuditEvent` per redaction or masking, stamped by ``clock``.
    """

    def __init__(
        self,
        policy: FieldPolicy | None = None,
        audit: AuditSink | None = None,
        clock: Clock | None = None,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        if policy is not None and not isinstance(policy, FieldPolicy):
            raise ValidationError("policy", f"must be a FieldPolicy, got {type(policy).__name__}")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth <= 0:
            raise ValidationError("max_depth", "must be a positive integer")
        self._policy = policy if policy is not None else FieldPolicy()
        self._audit = audit
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._max_depth = max_depth
        self._clean_lock = threading.Lock()
        self._clean: dict[tuple[str | None, str], None] = {}
        # What the policy says of a mapping key, by key: payloads repeat a few keys
        # millions of times (every L3 point of a kind has the same ones).
        self._key_plans: dict[tuple[str, str | None], _KeyPlan] = {}

    @property
    def policy(self) -> FieldPolicy:
        """The policy in force."""
        return self._policy

    def clear_cache(self) -> None:
        """Drop the texts remembered as clean (a forget leaves no copy behind)."""
        with self._clean_lock:
            self._clean.clear()
            self._key_plans.clear()

    # --- public API ------------------------------------------------------------

    def sanitize_text(self, text: str, *, location: str, field: str | None = None) -> SanitizedText:
        """Sanitize one string headed for ``location``; ``field`` selects per-field rules."""
        if not isinstance(text, str):
            raise ValidationError("text", f"must be a string, got {type(text).__name__}")
        location = _check_location(location)
        if field is not None and not isinstance(field, str):
            raise ValidationError("field", f"must be a string or None, got {type(field).__name__}")
        out: list[Redaction] = []
        if field is not None and self._policy.redacts_whole(field):
            result = self._redact_whole(text, Kind.FIELD, "$", out) if text else text
        else:
            result = self._apply(text, field, "$", out)
        self._emit(location, out)
        return SanitizedText(result, tuple(out))

    def identifier_finding(self, value: str, *, field: str | None = None) -> Kind | None:
        """The first kind found in identifier ``value`` that the policy would not keep
        as it is (any credential; personal data unless allowed under ``field``), or None.

        Identifiers (session, user, namespace, step ids...) become keys and payload
        fields as they are, so one that holds a finding is refused rather than stored
        redacted; nothing is audited, since nothing is stored.
        """
        if not isinstance(value, str):
            raise ValidationError("value", f"must be a string, got {type(value).__name__}")
        if self._known_clean(field, value):
            return None
        kinds = [m.kind for m in find_matches(value)] + embedded_numbers(value)
        if not kinds:
            self._remember_clean(field, value)
        for kind in kinds:
            if self._policy.action_for(kind, field) is not Action.ALLOW:
                return kind
        return None

    def _known_clean(self, field: str | None, text: str) -> bool:
        # A membership read needs no lock (one dict operation under the GIL); a miss
        # racing an eviction only costs a scan.
        return (field, text) in self._clean

    def _remember_clean(self, field: str | None, text: str) -> None:
        # The same strings pass the gateway several times on their way (observe, queue,
        # each L3 write of a memory unit's fields); one with no finding has nothing to
        # audit, so the rescan is skipped. Bounded FIFO; only short strings are kept.
        if len(text) > _CLEAN_CACHE_MAX_CHARS:
            return
        with self._clean_lock:
            self._clean[(field, text)] = None
            if len(self._clean) > _CLEAN_CACHE_ENTRIES:
                self._clean.pop(next(iter(self._clean)))

    def sanitize_value(self, obj: Any, *, location: str) -> SanitizedValue:
        """Sanitize a JSON-like value (dict/list/tuple/str/int/float/bool/None), recursively.

        A key that names a secret (``password``, ``api_key``, ``Authorization``...)
        has its whole value redacted, whatever its type. The input is never mutated.
        """
        location = _check_location(location)
        out: list[Redaction] = []
        result = self._walk(obj, "$", None, 0, out)
        self._emit(location, out)
        return SanitizedValue(result, tuple(out))

    def sanitize_record(
        self, obj: Any, *, location: str, context: Sequence[str] = ()
    ) -> SanitizedValue:
        """Sanitize a record whose fields were derived from one another (a trace card:
        the question, and the entities read out of it), like :meth:`sanitize_value`,
        and then remove from every field what was found anywhere in the record or in
        ``context`` (the raw texts it was built from).

        A value cut out of its sentence loses its cue: "Quokka5RavineB" alone is no
        password, but it is one in "the password is Quokka5RavineB". So each finding
        of the record and of ``context`` is also looked for, as written and in its
        compact form (letters and digits only, NFKC, lowercased), in every string of
        the record: found as written, it is replaced; found only in compact form
        (an entity normalized to its digits), the whole string is.
        """
        location = _check_location(location)
        if isinstance(context, str) or not isinstance(context, Sequence):
            raise ValidationError("context", "must be a sequence of strings")
        found: dict[str, Kind] = {}
        spans: list[tuple[str, Match]] = []
        for text in (*context, *_strings(obj, self._max_depth)):
            if not isinstance(text, str):
                raise ValidationError("context", "must be a sequence of strings")
            if self._known_clean(None, text):
                continue
            for match in find_matches(text):
                if self._policy.action_for(match.kind, None) is not Action.ALLOW:
                    found.setdefault(text[match.start : match.end], match.kind)
                    spans.append((text, match))
        out: list[Redaction] = []
        result = self._walk(obj, "$", None, 0, out)
        if found:
            result = self._scrub(result, "$", _Findings(found, spans), 0, out)
        self._emit(location, out)
        return SanitizedValue(result, tuple(out))

    def _scrub(
        self, obj: Any, path: str, found: _Findings, depth: int, out: list[Redaction]
    ) -> Any:
        if isinstance(obj, str):
            return found.scrub(obj, path, out)
        if isinstance(obj, Mapping):
            cleaned = {
                k: self._scrub(v, _child_path(path, str(k)), found, depth + 1, out)
                for k, v in obj.items()
            }
            return MappingProxyType(cleaned) if isinstance(obj, MappingProxyType) else cleaned
        if isinstance(obj, list | tuple):
            items = [
                self._scrub(v, f"{path}[{i}]", found, depth + 1, out) for i, v in enumerate(obj)
            ]
            return tuple(items) if isinstance(obj, tuple) else items
        return obj

    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        """Shorthand for ``sanitize_text(...).text``."""
        return self.sanitize_text(text, location=location, field=field).text

    def value(self, obj: Any, *, location: str) -> Any:
        """Shorthand for ``sanitize_value(...).value``."""
        return self.sanitize_value(obj, location=location).value

    # --- internals -------------------------------------------------------------

    def _apply(self, text: str, rule_field: str | None, path: str, out: list[Redaction]) -> str:
        """``text`` with its findings handled per the policy; a string known to have
        none under ``rule_field`` is returned without a scan.

        What is left is scanned again until nothing changes: a value found only once its
        neighbour is replaced ("I use X as my password" then more text, where the text
        after the cue was taken first) would otherwise be found by the next reader, and
        L3 refuses a text the gateway would still change.
        """
        if self._known_clean(rule_field, text):
            return text
        matches = find_matches(text)
        if not matches:
            self._remember_clean(rule_field, text)
            return text
        result, spans = self._replace(text, matches, rule_field, path, out)
        for _ in range(_MAX_ROUNDS):
            # Only the text around each replacement can read differently now: it is
            # looked at first, and the whole text scanned again only if it finds one.
            if not spans or not self._near_finding(result, spans):
                break
            text = result
            matches = find_matches(text)
            if not matches:
                break
            result, spans = self._replace(text, matches, rule_field, path, out)
            if result == text:
                break
        return result

    @staticmethod
    def _near_finding(text: str, spans: list[tuple[int, int]]) -> bool:
        windows: list[tuple[int, int]] = []
        for start, end in spans:
            low, high = max(0, start - _NEAR), min(len(text), end + _NEAR)
            if windows and low <= windows[-1][1]:
                windows[-1] = (windows[-1][0], high)
            else:
                windows.append((low, high))
        # One scan of the windows joined by blank lines (a finding made up across a
        # join only costs a full rescan).
        return _has_finding("\n\n\n".join(text[low:high] for low, high in windows))

    def _replace(
        self,
        text: str,
        matches: list[Match],
        rule_field: str | None,
        path: str,
        out: list[Redaction],
    ) -> tuple[str, list[tuple[int, int]]]:
        """``text`` with ``matches`` handled per the policy, and where each replacement
        stands in the result."""
        spans: list[tuple[int, int]] = []
        size = 0
        parts: list[str] = []
        cursor = 0
        for match in matches:
            action = self._policy.action_for(match.kind, rule_field)
            if action is Action.ALLOW:
                continue
            original = text[match.start : match.end]
            if action is Action.MASK:
                masker = _MASKERS.get(match.kind)
                replacement = masker(original) if masker else placeholder(match.kind)
                if find_matches(replacement):
                    # A hint that still holds a finding (a span of two kinds merged,
                    # a masked card whose tail starts an address) would be found
                    # again: the whole span is redacted instead.
                    replacement = placeholder(match.kind)
            else:
                replacement = f"{match.quote}{placeholder(match.kind)}{match.quote}"
            parts.append(text[cursor : match.start])
            size += match.start - cursor
            parts.append(replacement)
            spans.append((size, size + len(replacement)))
            size += len(replacement)
            cursor = match.end
            out.append(Redaction(match.kind, action, path, match.start, match.end - match.start))
        if cursor == 0:
            return text, []
        parts.append(text[cursor:])
        return "".join(parts), spans

    def _redact_whole(self, value: Any, kind: Kind, path: str, out: list[Redaction]) -> str:
        length = len(value) if isinstance(value, str) else 0
        out.append(Redaction(kind, Action.REDACT, path, 0, length))
        return placeholder(kind)

    def _walk(
        self, obj: Any, path: str, rule_field: str | None, depth: int, out: list[Redaction]
    ) -> Any:
        if depth > self._max_depth:
            raise ValidationError(path, f"nested deeper than {self._max_depth} levels")
        if obj is None or isinstance(obj, bool | float):
            # bool is an int subclass: checked first so True never becomes "1".
            return obj
        if isinstance(obj, str):
            return self._apply(obj, rule_field, path, out)
        if isinstance(obj, int):
            # Card and phone numbers arrive as JSON numbers too.
            digits = str(obj)
            sanitized = self._apply(digits, rule_field, path, out)
            return obj if sanitized == digits else sanitized
        if isinstance(obj, Mapping):
            return self._walk_mapping(obj, path, rule_field, depth, out)
        if isinstance(obj, list | tuple):
            items = [
                self._walk(item, f"{path}[{index}]", rule_field, depth + 1, out)
                for index, item in enumerate(obj)
            ]
            return tuple(items) if isinstance(obj, tuple) else items
        raise ValidationError(path, f"unsupported type {type(obj).__name__} in a JSON-like value")

    def _key_plan(self, key: str, rule_field: str | None) -> _KeyPlan | None:
        """The policy's verdict on a clean key (None: the key itself holds a finding,
        so it takes the full walk and is reported)."""
        plan = self._key_plans.get((key, rule_field))
        if plan is not None:
            return plan
        if not self._known_clean(rule_field, key) and find_matches(key):
            return None
        self._remember_clean(rule_field, key)
        plan = _KeyPlan(
            secret=key_kind(key),
            whole=self._policy.redacts_whole(key),
            governing=key if self._policy.has_rules_for(key) else rule_field,
        )
        if len(self._key_plans) < _KEY_PLANS_MAX:
            self._key_plans[(key, rule_field)] = plan
        return plan

    def _clean_leaf(self, item: Any, governing: str | None) -> bool:
        """Whether ``item`` is a scalar, or a flat list or tuple of them, already known
        clean under ``governing`` (what the full walk would return unchanged)."""
        if item is None or isinstance(item, bool | float):
            return True
        if isinstance(item, str):
            return self._known_clean(governing, item)
        if isinstance(item, int):
            return self._known_clean(governing, str(item))
        if isinstance(item, list | tuple):
            return all(
                (isinstance(x, str) and self._known_clean(governing, x))
                or x is None
                or isinstance(x, bool | float)
                for x in item
            )
        return False

    def _walk_mapping(
        self,
        obj: Mapping[Any, Any],
        path: str,
        rule_field: str | None,
        depth: int,
        out: list[Redaction],
    ) -> Any:
        result: dict[Any, Any] = {}
        for key, item in obj.items():
            plan = self._key_plan(key, rule_field) if isinstance(key, str) else None
            if (
                plan is not None
                and plan.secret is None
                and not plan.whole
                and key not in result
                and self._clean_leaf(item, plan.governing)
            ):
                # The common case: a clean key holding a value already known clean.
                result[key] = list(item) if isinstance(item, list) else item
                continue
            if isinstance(key, str):
                # Keys can carry PII too ({"alice@example.com": ...}); their redactions
                # are reported at the path $...["<key>"].
                new_key: Any = self._apply(key, rule_field, _child_path(path, "<key>"), out)
                child = _child_path(path, new_key)
            elif isinstance(key, int) and not isinstance(key, bool):
                new_key, child = key, f"{path}[{key}]"
            else:
                raise ValidationError(path, f"keys must be strings, got {type(key).__name__}")
            base, suffix = new_key, 2
            while new_key in result:  # two keys sanitized to the same placeholder
                new_key, suffix = f"{base}#{suffix}", suffix + 1
            if isinstance(key, str):
                secret = key_kind(key)
                if secret is not None and item is not None:
                    result[new_key] = self._redact_whole(item, secret, child, out)
                    continue
                if self._policy.redacts_whole(key) and item is not None:
                    result[new_key] = self._redact_whole(item, Kind.FIELD, child, out)
                    continue
                governing = key if self._policy.has_rules_for(key) else rule_field
            else:
                governing = rule_field
            result[new_key] = self._walk(item, child, governing, depth + 1, out)
        return MappingProxyType(result) if isinstance(obj, MappingProxyType) else result

    def _emit(self, location: str, redactions: list[Redaction]) -> None:
        if self._audit is None or not redactions:
            return
        # The location itself may embed an id made of PII; it gets no exemption.
        safe_location = self._apply(location, None, "$", [])
        now = self._clock.now()
        for item in redactions:
            self._audit.record(
                AuditEvent(
                    kind=item.kind,
                    action=item.action,
                    location=safe_location,
                    field_path=item.field_path,
                    offset=item.offset,
                    length=item.length,
                    timestamp=now,
                )
            )
