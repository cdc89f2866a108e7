"""The service: one capability table served over REST, gRPC and MCP (``memstrata serve``)."""
