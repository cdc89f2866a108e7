"""An OpenAI-compatible proxy: ``POST /v1/chat/completions`` with the user's memories.

:mod:`.settings` (the upstream and the context windows), :mod:`.messages` (pure: the
request read, the memories merged into its system message), :mod:`.forward` (the
upstream call, whole and streamed), :mod:`.routes` (the route on ``memstrata serve``
and the app of ``memstrata proxy``). docs/service.md, "OpenAI-compatible proxy".
"""
