"""Adapters to agent frameworks; each imports its framework itself (optional extras)."""
