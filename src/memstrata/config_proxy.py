"""The OpenAI-compatible proxy's settings: the ``proxy`` section of
:class:`memstrata.config.Settings` (the proxy itself: :mod:`memstrata.service.proxy`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from memstrata.config_types import check_field_types
from memstrata.errors import ConfigError

DEFAULT_WINDOW_TOKENS = 8_192
"""The window assumed for a model neither the settings nor the built-in table know: the
smallest common one, so the memories sent always fit (a deployment sets its own)."""


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """Where ``POST /v1/chat/completions`` forwards, and the windows it budgets for.

    ``upstream`` is an OpenAI-compatible base URL (``https://api.openai.com/v1``): the
    request goes to ``<upstream>/chat/completions``. Without it ``memstrata serve``
    has no proxy route (``--upstream`` sets it too).
    """

    upstream: str | None = None
    windows: tuple[tuple[str, int], ...] = ()
    """``(model name, context window in tokens)`` pairs (in a settings file
    ``[["my-model", 32768]]``); they win over the built-in table
    (:data:`memstrata.context.budget.KNOWN_WINDOWS`)."""
    default_window_tokens: int = DEFAULT_WINDOW_TOKENS
    """The window of a model neither ``windows`` nor the built-in table knows."""
    k: int = 10
    """Memories retrieved for the last user message (as ``build_context``'s ``k``)."""
    connect_timeout_s: float = 5.0
    """Connecting to the upstream; past it the answer is 502."""
    timeout_s: float = 120.0
    """Each read from the upstream (a whole answer, or the next streamed chunk); past
    it the answer is 504."""

    def __post_init__(self) -> None:
        check_field_types(self, "proxy.")
        if self.upstream is not None and not self.upstream.startswith(("http://", "https://")):
            raise ConfigError("proxy.upstream: must be an http(s) URL")
        for index, (model, size) in enumerate(self.windows):
            if not model.strip() or size <= 0:
                raise ConfigError(f"proxy.windows[{index}]: must be a model name and tokens > 0")
        for name in ("default_window_tokens", "k"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"proxy.{name}: must be an integer > 0")
        for name in ("connect_timeout_s", "timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"proxy.{name}: must be a finite number > 0")

    def window_of(self, model: str, known: int | None) -> int:
        """The context window of ``model``: the settings' own, else ``known`` (the
        built-in table's, :func:`memstrata.context.budget.known_window`), else the
        default."""
        own = dict(self.windows)
        return own.get(model) or known or self.default_window_tokens

    @property
    def completions_url(self) -> str:
        if self.upstream is None:
            raise ConfigError("proxy.upstream: not set (memstrata serve --upstream URL)")
        return self.upstream.rstrip("/") + "/chat/completions"
