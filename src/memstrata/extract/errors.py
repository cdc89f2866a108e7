"""Errors raised by extractors.

Both are :class:`~memstrata.errors.BackendError` subclasses, so the service layer maps
them through the shared ``ERROR_CODES`` table without knowing about extraction.
"""

from __future__ import annotations

from memstrata.errors import BackendError, BackendUnavailableError


class ExtractionError(BackendError):
    """The extractor's infrastructure failed (endpoint error, unusable answer).

    Never raised for a turn that simply holds nothing worth remembering: that is an
    empty result.
    """


class ExtractionUnavailableError(ExtractionError, BackendUnavailableError):
    """The extraction endpoint could not be reached, even after retries."""
