"""Per-step context routing: intents, bundles with provenance, and the router."""

from memstrata.router.bundle import ContextBundle, ContextItem, MissingContext, Provenance
from memstrata.router.intents import (
    DEFAULT_INTENTS,
    RESPOND,
    SEED_INTENTS,
    IntentRegistry,
    IntentSpec,
    L2Need,
    L3Need,
)
from memstrata.router.recognize import (
    Entity,
    ExampleRecognizer,
    IntentRecognizer,
    MessageUnderstanding,
    Recognition,
)
from memstrata.router.router import ContextRouter

__all__ = [
    "DEFAULT_INTENTS",
    "RESPOND",
    "SEED_INTENTS",
    "ContextBundle",
    "ContextItem",
    "ContextRouter",
    "Entity",
    "ExampleRecognizer",
    "IntentRecognizer",
    "IntentRegistry",
    "IntentSpec",
    "L2Need",
    "L3Need",
    "MessageUnderstanding",
    "MissingContext",
    "Provenance",
    "Recognition",
]
