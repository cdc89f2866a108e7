"""The write path's settings (defined with the others in :mod:`memstrata.config`)."""

from memstrata.config import DEFAULT_MULTI_VALUED, MemorySettings, PipelineSettings

__all__ = ["DEFAULT_MULTI_VALUED", "MemorySettings", "PipelineSettings"]
