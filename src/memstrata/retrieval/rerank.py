"""The optional second-stage reranker.

:class:`Reranker` scores (query, candidate text) pairs; the retriever blends that
score with its own by ``RetrievalSettings.rerank_weight``. Two implementations:

* :class:`EmbeddingRescorer` - the offline default: cosine of the query to each
  candidate's stored vector, mapped to [0, 1]. No model beyond the embedder.
* :class:`CrossEncoderReranker` - a sentence-transformers cross-encoder loaded from
  a local directory (nothing is downloaded); only when one is installed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.loading import loading


class Reranker(Protocol):
    """Scores candidates for a query; higher is more relevant, any scale."""

    def scores(
        self,
        query: str,
        query_vector: NDArray[np.float32],
        texts: Sequence[str],
        cosines: Sequence[float],
    ) -> list[float]:
        """One score per text, in order. ``cosines`` are the texts' stored-vector
        cosines to ``query_vector`` (free for embedding-based rescoring)."""
        ...


class EmbeddingRescorer:
    """Cosine similarity of the stored vectors, rescaled from [-1, 1] to [0, 1]."""

    def scores(
        self,
        query: str,
        query_vector: NDArray[np.float32],
        texts: Sequence[str],
        cosines: Sequence[float],
    ) -> list[float]:
        """``(1 + cosine) / 2`` per candidate."""
        if len(cosines) != len(texts):
            raise ValidationError("cosines", "must have one value per text")
        return [(1.0 + float(c)) / 2.0 for c in cosines]


class CrossEncoderReranker:
    """A cross-encoder from a local model directory (``sentence_transformers.CrossEncoder``).

    Loaded on first use with ``local_files_only``: a missing model is a
    ``BackendUnavailableError`` naming the path, never a download.
    """

    def __init__(
        self, model_dir: str | Path, *, max_length: int = 256, batch_size: int = 32
    ) -> None:
        self._path = Path(model_dir)
        if not (self._path / "config.json").is_file():
            raise BackendUnavailableError(
                f"no cross-encoder model (config.json) under {self._path}"
            )
        self._max_length = max_length
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                # Runs inside the read's L3 part: not counted by its deadline.
                with loading():
                    from sentence_transformers import CrossEncoder

                    self._model = CrossEncoder(
                        str(self._path), max_length=self._max_length, local_files_only=True
                    )
            except Exception as exc:
                raise BackendUnavailableError(
                    f"cannot load cross-encoder from {self._path}: {exc}"
                ) from exc
        return self._model

    def scores(
        self,
        query: str,
        query_vector: NDArray[np.float32],
        texts: Sequence[str],
        cosines: Sequence[float],
    ) -> list[float]:
        """The model's relevance logit (or probability) for each (query, text) pair."""
        if not texts:
            return []
        with self._lock:
            model = self._load()
            try:
                raw = model.predict(
                    [(query, text) for text in texts],
                    batch_size=self._batch_size,
                    show_progress_bar=False,
                )
            except Exception as exc:
                raise BackendError(f"cross-encoder predict failed: {exc}") from exc
        values = np.asarray(raw, dtype=np.float64).reshape(len(texts), -1)
        # A two-label head gives (irrelevant, relevant); a single logit is the score.
        column = values[:, -1]
        return [float(v) for v in column]
