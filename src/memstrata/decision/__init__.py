"""The decision layer: judgment and routing, tools with the validation gate and fallbacks,
trace cards, reply checks, decision metrics and the feedback loop (docs/architecture.md,
"Decisions and feedback")."""

from memstrata.decision.cards import CardStore, TraceCard, cards_json
from memstrata.decision.consistency import ReplyCheck, check_reply
from memstrata.decision.decide import ROUTES, Decision, Route, UsedContext, decide
from memstrata.decision.judgment import Judgment, facts_held, rule_judgment
from memstrata.decision.layer import DecisionLayer
from memstrata.decision.metrics import DecisionMetrics, DecisionRates, decision_rates
from memstrata.decision.model_judge import ModelJudge
from memstrata.decision.policy import PolicyRegistry, RiskThresholds, Slot, StepPolicy
from memstrata.decision.tools import (
    CANNOT_COMPLETE,
    Attempt,
    Check,
    GateVerdict,
    PendingCall,
    ToolExecutor,
    ToolFunction,
    ToolOutcome,
    ToolRegistry,
    ToolSpec,
    facts_of,
    gate,
    next_in_chain,
)
from memstrata.feedback.events import (
    FEEDBACK_KINDS,
    KIND_FEEDBACK,
    FeedbackEvent,
    FeedbackKind,
    FeedbackPlan,
    FeedbackReceipt,
    FeedbackRecord,
    FeedbackSteps,
    feedback_plan,
)
from memstrata.feedback.report import (
    FeedbackReport,
    IgnoredMemory,
    IntentStats,
    QuestionStats,
    build_feedback_report,
)

__all__ = [
    "CANNOT_COMPLETE",
    "FEEDBACK_KINDS",
    "KIND_FEEDBACK",
    "ROUTES",
    "Attempt",
    "CardStore",
    "Check",
    "Decision",
    "DecisionLayer",
    "DecisionMetrics",
    "DecisionRates",
    "FeedbackEvent",
    "FeedbackKind",
    "FeedbackPlan",
    "FeedbackReceipt",
    "FeedbackRecord",
    "FeedbackReport",
    "FeedbackSteps",
    "GateVerdict",
    "IgnoredMemory",
    "IntentStats",
    "Judgment",
    "ModelJudge",
    "PendingCall",
    "PolicyRegistry",
    "QuestionStats",
    "ReplyCheck",
    "RiskThresholds",
    "Route",
    "Slot",
    "StepPolicy",
    "ToolExecutor",
    "ToolFunction",
    "ToolOutcome",
    "ToolRegistry",
    "ToolSpec",
    "TraceCard",
    "UsedContext",
    "build_feedback_report",
    "cards_json",
    "check_reply",
    "decide",
    "decision_rates",
    "facts_held",
    "facts_of",
    "feedback_plan",
    "gate",
    "next_in_chain",
    "rule_judgment",
]
