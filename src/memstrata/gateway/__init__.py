"""The sanitizing gateway in front of every write into L1/L2/L3 and every log line.

::

    audit = InMemoryAuditLog()
    gateway = Sanitizer(FieldPolicy.from_config({"email": "mask"}), audit=audit)
    gateway.text("call 13812345678 or mail alice@example.com", location="l3:memories")
    # 'call [REDACTED:phone] or mail a***@example.com'
    gateway.value({"api_key": "abc", "note": "ok"}, location="l2:wm:{s1}:api:x")
    # {'api_key': '[REDACTED:secret]', 'note': 'ok'}
    audit.events()  # kind, location, field path, offset, length, time; never the value

Credentials are always replaced by a typed placeholder; PII follows the policy
(redact by default, or mask / allow per kind and per field).
"""

from memstrata.gateway.audit import (
    AuditEvent,
    AuditSink,
    InMemoryAuditLog,
    JsonlAuditLog,
    TeeAuditLog,
)
from memstrata.gateway.kinds import CREDENTIAL_KINDS, PII_KINDS, Kind, Match, placeholder
from memstrata.gateway.logging import RedactingFilter, install_log_redaction
from memstrata.gateway.policy import Action, FieldPolicy
from memstrata.gateway.sanitizer import Redaction, SanitizedText, SanitizedValue, Sanitizer
from memstrata.gateway.scan import find_matches

__all__ = [
    "CREDENTIAL_KINDS",
    "PII_KINDS",
    "Action",
    "AuditEvent",
    "AuditSink",
    "FieldPolicy",
    "InMemoryAuditLog",
    "JsonlAuditLog",
    "Kind",
    "Match",
    "RedactingFilter",
    "Redaction",
    "SanitizedText",
    "SanitizedValue",
    "Sanitizer",
    "TeeAuditLog",
    "find_matches",
    "install_log_redaction",
    "placeholder",
]
