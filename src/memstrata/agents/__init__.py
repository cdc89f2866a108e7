"""Reference agents that run offline on the engine (``memstrata demo support`` and
``memstrata demo diagnostics``): a customer-support agent and the battery-health
diagnostics agent (docs/agents.md; docs/architecture.md, "The layers"). Each writes its
replies by rule by default (the support agent: the items the message asks about; the
diagnostics agent: its plan's composers), or with any OpenAI-compatible endpoint
(:func:`~memstrata.agents.writer.chat_writer_from_env`)."""

from memstrata.agents.diagnostics import DeviceReport, DiagnosticsAgent
from memstrata.agents.loop import AgentLoop, Move, StepRecord, store_api_response
from memstrata.agents.run import AgentRun
from memstrata.agents.support import SupportAgent
from memstrata.agents.writer import (
    ChatWriter,
    ReplyRequest,
    ReplyWriter,
    RuleWriter,
    ScriptedWriter,
    chat_writer_from_env,
)

__all__ = [
    "AgentLoop",
    "AgentRun",
    "ChatWriter",
    "DeviceReport",
    "DiagnosticsAgent",
    "Move",
    "ReplyRequest",
    "ReplyWriter",
    "RuleWriter",
    "ScriptedWriter",
    "StepRecord",
    "SupportAgent",
    "chat_writer_from_env",
    "store_api_response",
]
