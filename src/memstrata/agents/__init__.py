"""Reference agents that run offline on the engine (``memstrata demo support`` and
``memstrata demo diagnostics``): a customer-support agent and the battery-health
diagnostics agent (docs/agents.md; docs/architecture.md, "The layers"). Each writes its
replies with a deterministic scripted model by default, or with any OpenAI-compatible
endpoint (:func:`~memstrata.agents.writer.chat_writer_from_env`)."""

from memstrata.agents.diagnostics import DeviceReport, DiagnosticsAgent
from memstrata.agents.loop import AgentLoop, Move, StepRecord, store_api_response
from memstrata.agents.run import AgentRun
from memstrata.agents.support import SupportAgent
from memstrata.agents.writer import (
    ChatWriter,
    ReplyRequest,
    ReplyWriter,
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
    "ScriptedWriter",
    "StepRecord",
    "SupportAgent",
    "chat_writer_from_env",
    "store_api_response",
]
