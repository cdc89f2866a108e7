"""An OpenAI-compatible proxy: ``POST /v1/chat/completions`` with the user's memories.

:mod:`.messages` (pure: the request read, the memories merged into its system
message), :mod:`.forward` (the upstream call, whole and streamed), :mod:`.routes` (the
route on ``memstrata serve`` and the app of ``memstrata proxy``), :mod:`.serve` (that
command); the settings are :mod:`memstrata.config_proxy`. docs/service.md,
"OpenAI-compatible proxy".
"""

PROXY_PATH = "/v1/chat/completions"
"""The proxy's route (``memstrata serve --upstream``, ``memstrata proxy``)."""
