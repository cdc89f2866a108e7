"""Field-level policy: what the gateway does with each kind, globally and per field.

Credentials are not negotiable: a policy that tries to mask or allow one is a
:class:`~memstrata.errors.ConfigError` at construction, so no caller can weaken
the "never stored" rule by configuration. PII may be masked or allowed, globally
or only under named fields (``support_contact`` may keep its email address).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from memstrata.errors import ConfigError
from memstrata.gateway.kinds import CREDENTIAL_KINDS, Kind


class Action(StrEnum):
    """What happens to a detected value."""

    REDACT = "redact"  # replaced by a typed placeholder
    MASK = "mask"  # a hint is kept: a***@example.com, 138****5678
    ALLOW = "allow"  # left as it is


def _kind(value: Any, where: str) -> Kind:
    if isinstance(value, Kind):
        kind = value
    elif isinstance(value, str):
        try:
            kind = Kind(value)
        except ValueError:
            known = ", ".join(k.value for k in Kind)
            raise ConfigError(f"{where}: unknown kind {value!r} (known: {known})") from None
    else:
        raise ConfigError(f"{where}: kind must be a string, got {type(value).__name__}")
    if kind is Kind.FIELD:
        raise ConfigError(f"{where}: 'field' is not a detectable kind")
    return kind


def _action(value: Any, where: str) -> Action:
    if isinstance(value, Action):
        return value
    if isinstance(value, str):
        try:
            return Action(value)
        except ValueError:
            raise ConfigError(
                f"{where}: unknown action {value!r} (known: redact, mask, allow)"
            ) from None
    raise ConfigError(f"{where}: action must be a string, got {type(value).__name__}")


def _kind_actions(raw: Any, where: str) -> Mapping[Kind, Action]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a mapping of kind -> action")
    out: dict[Kind, Action] = {}
    for key, value in raw.items():
        kind = _kind(key, where)
        action = _action(value, f"{where}[{kind.value}]")
        if kind in CREDENTIAL_KINDS and action is not Action.REDACT:
            raise ConfigError(
                f"{where}[{kind.value}]: credentials are always redacted, cannot {action.value}"
            )
        out[kind] = action
    return MappingProxyType(out)


def _field_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: field names must be non-empty strings, got {value!r}")
    # Field names match case-insensitively: JSON from different services disagrees.
    return value.strip().lower()


@dataclass(frozen=True, slots=True)
class FieldPolicy:
    """Frozen, validated policy. The default (no arguments) redacts everything.

    ``kinds`` overrides the action for a kind everywhere; ``fields`` overrides it
    under a named field (the nearest enclosing dict key, or the ``field`` passed to
    ``sanitize_text``); ``redact_fields`` names fields whose whole value is replaced
    by ``[REDACTED:field]`` whatever it contains. Keys and actions may be given as
    strings; they are checked and normalised at construction.
    """

    kinds: Mapping[Kind, Action] = field(default_factory=dict, hash=False)
    fields: Mapping[str, Mapping[Kind, Action]] = field(default_factory=dict, hash=False)
    redact_fields: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        kinds = _kind_actions(self.kinds, "kinds")
        if not isinstance(self.fields, Mapping):
            raise ConfigError("fields: must be a mapping of field name -> {kind: action}")
        fields: dict[str, Mapping[Kind, Action]] = {}
        for name, rules in self.fields.items():
            key = _field_name(name, "fields")
            fields[key] = _kind_actions(rules, f"fields[{key}]")
        raw_redact: Any = self.redact_fields
        if isinstance(raw_redact, str) or not isinstance(raw_redact, Iterable):
            raise ConfigError("redact_fields: must be a collection of field names")
        redact = frozenset(_field_name(n, "redact_fields") for n in raw_redact)
        # Frozen dataclass: normalised copies are installed once, here.
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "fields", MappingProxyType(fields))
        object.__setattr__(self, "redact_fields", redact)

    @classmethod
    def from_config(
        cls,
        kinds: Mapping[str, str] | None = None,
        fields: Mapping[str, Mapping[str, str]] | None = None,
        redact_fields: Iterable[str] = (),
    ) -> FieldPolicy:
        """Build a policy from plain strings (a config file, the CLI), fully typed.

        ``FieldPolicy.from_config({"email": "mask"}, {"support_contact": {"email": "allow"}},
        ["notes"])``; errors are :class:`ConfigError` naming the offending entry.
        """
        raw_kinds: Any = {} if kinds is None else kinds
        raw_fields: Any = {} if fields is None else fields
        if not isinstance(raw_fields, Mapping):
            raise ConfigError("fields: must be a mapping of field name -> {kind: action}")
        return cls(
            kinds=_kind_actions(raw_kinds, "kinds"),
            fields={
                name: _kind_actions(rules, f"fields[{name}]") for name, rules in raw_fields.items()
            },
            redact_fields=frozenset(redact_fields),
        )

    def action_for(self, kind: Kind, field_name: str | None = None) -> Action:
        """The action for ``kind`` found under ``field_name`` (credentials: always redact)."""
        if kind in CREDENTIAL_KINDS:
            return Action.REDACT
        if field_name is not None:
            rules = self.fields.get(field_name.lower())
            if rules is not None and kind in rules:
                return rules[kind]
        return self.kinds.get(kind, Action.REDACT)

    def redacts_whole(self, field_name: str) -> bool:
        """True if every value under ``field_name`` is replaced wholesale."""
        return field_name.lower() in self.redact_fields

    def has_rules_for(self, field_name: str) -> bool:
        """True if ``field_name`` has its own per-kind rules (it then governs its subtree)."""
        return field_name.lower() in self.fields
