"""L1: immutable per-session state and the registry that updates it safely."""

from memstrata.session.registry import SessionRegistry, TextSanitizer
from memstrata.session.state import ApiResultRef, AuthContext, SessionState, TraceEntry

__all__ = [
    "ApiResultRef",
    "AuthContext",
    "SessionRegistry",
    "SessionState",
    "TextSanitizer",
    "TraceEntry",
]
