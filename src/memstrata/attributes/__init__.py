"""What the engine knows about the properties of a user (see :mod:`.registry`)."""

from memstrata.attributes.registry import (
    ATTRIBUTES,
    MULTI_VALUED,
    NEEDS,
    Attribute,
    Need,
    asked,
    by_name,
    needed,
    normal_value,
    plans,
)

__all__ = [
    "ATTRIBUTES",
    "MULTI_VALUED",
    "NEEDS",
    "Attribute",
    "Need",
    "asked",
    "by_name",
    "needed",
    "normal_value",
    "plans",
]
