"""The sanitizing gateway in front of every write into L1/L2/L3 and every log line.

::

    sanitizer = Sanitizer(FieldPolicy(kinds={"email": "mask"}), audit=InMemoryAuditLog())
    sanitizer.text("key sk-... for a@example.com", location="l2:wm:{s1}:api:x")
    # 'key [REDACTED:api_key] for a***@example.com'
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
