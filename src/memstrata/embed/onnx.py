"""all-MiniLM-L6-v2 on ONNX Runtime, from a graph built out of the bundled weights.

Nothing is downloaded and nothing needs torch: the graph is written node by node from
the model's ``config.json`` and ``model.safetensors`` (:mod:`memstrata.embed.graph`),
checked on a padded probe batch against the NumPy forward pass of the same weights
(:mod:`memstrata.embed.bert`), and cached under ``cache_dir`` with a name derived from
the weights, the recipe and the ``onnx`` version, so a new model or recipe builds again.
The file is written to a temporary name and renamed, so concurrent processes never
read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.bert import BertConfig, forward, load_weights
from memstrata.embed.graph import OPSET, write_graph
from memstrata.embed.tokens import TokenVectors, pool_and_normalize
from memstrata.errors import BackendUnavailableError

# Bump when the graph recipe changes: old cache files are ignored. 1 was torch's
# exporter; 2 is the graph built by memstrata.embed.graph.
EXPORT_VERSION = 2
# Largest difference between the graph's unit vectors and the NumPy reference accepted
# before the graph is used (docs/benchmarks.md has what is measured).
MAX_EXPORT_DIFF = 1e-4
_PROBE = (
    "I moved to Berlin last year for work",
    "我喜欢杭州的西湖",
    "x",
)


def default_cache_dir() -> Path:
    """``$MEMSTRATA_MODEL_CACHE``, else ``$XDG_CACHE_HOME/memstrata/models``
    (``~/.cache/memstrata/models``)."""
    explicit = os.environ.get("MEMSTRATA_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memstrata" / "models"


def max_seq_length(model_dir: Path) -> int:
    """The window sentence-transformers uses for this model (256 for MiniLM)."""
    config = model_dir / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", 256)
    except (OSError, ValueError) as exc:
        raise BackendUnavailableError(f"cannot read {config}: {exc}") from exc
    if not isinstance(value, int) or value <= 0:
        raise BackendUnavailableError(f"{config}: max_seq_length must be a positive integer")
    return value


def onnx_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the graph built from ``model_dir`` is cached: the name changes with the
    weights, the configuration, the recipe and the ``onnx`` package's version."""
    try:
        builder_version = metadata.version("onnx")
    except metadata.PackageNotFoundError:
        builder_version = "none"
    weights = model_dir / "model.safetensors"
    try:
        stat = weights.stat()
        config = (model_dir / "config.json").read_bytes()
    except OSError as exc:
        raise BackendUnavailableError(f"cannot read the MiniLM weights: {exc}") from exc
    digest = hashlib.sha256()
    for part in (str(stat.st_size), str(stat.st_mtime_ns), str(EXPORT_VERSION), str(OPSET)):
        digest.update(part.encode())
    digest.update(builder_version.encode())
    digest.update(config)
    return cache_dir / f"all-minilm-l6-v2-{digest.hexdigest()[:16]}.onnx"


class OnnxMiniLM:
    """Tokenizer + ONNX Runtime session + mean pooling + L2 normalization.

    ``encode`` is thread-safe (ORT sessions and ``tokenizers`` are); rows come back
    in input order.
    """

    def __init__(self, model_dir: Path, graph: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.inter_op_num_threads = 1
        if threads is not None:
            options.intra_op_num_threads = threads
        # Idle worker threads would spin between queries and steal the cores the
        # Valkey server and the index share with us.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(graph), options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:
            raise BackendUnavailableError(f"cannot open the ONNX MiniLM at {graph}: {exc}") from exc
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_truncation(max_length=max_seq_length(model_dir))
        tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        self._tokenizer = tokenizer

    def encode(self, texts: Sequence[str], batch_size: int) -> NDArray[np.float32]:
        """Unit vectors for ``texts``; long inputs are batched by length (less padding)."""
        if len(texts) <= batch_size:
            return self._batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            vectors = self._batch([texts[i] for i in chosen])
            if out.shape[1] == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[chosen] = vectors
        return out

    def _batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: NDArray[np.float32] = self._session.run(None, feeds)[0]
        return pool_and_normalize(hidden, mask)

    def token_vectors(self, text: str) -> TokenVectors:
        """``text``'s token vectors from one pass; ``pooled()`` equals ``encode([text])``."""
        encoding = self._tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: NDArray[np.float32] = self._session.run(None, feeds)[0][0]
        keep = mask[0] == 1
        offsets = tuple(
            (int(start), int(end))
            for (start, end), kept in zip(encoding.offsets, keep, strict=True)
            if kept
        )
        return TokenVectors(text, np.ascontiguousarray(hidden[keep], dtype=np.float32), offsets)


def ensure_exported(model_dir: Path, cache_dir: Path) -> Path:
    """The cached ONNX graph for ``model_dir``, built and verified when missing."""
    target = onnx_path(model_dir, cache_dir)
    if target.is_file():
        return target
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackendUnavailableError(f"cannot create the model cache {cache_dir}: {exc}") from exc
    try:
        handle, tmp_name = tempfile.mkstemp(prefix=target.stem, suffix=".tmp", dir=cache_dir)
        os.close(handle)
    except OSError as exc:
        raise BackendUnavailableError(
            f"cannot write to the model cache {cache_dir}: {exc}"
        ) from exc
    tmp = Path(tmp_name)
    try:
        _export(model_dir, tmp)
        _verify(model_dir, tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise BackendUnavailableError(f"cannot write the ONNX MiniLM to {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _export(model_dir: Path, target: Path) -> None:
    """Write the ONNX graph of the encoder in ``model_dir`` to ``target`` (no torch)."""
    try:
        write_graph(model_dir, target)
    except BackendUnavailableError:
        raise
    except Exception as exc:  # onnx's own errors: the graph cannot be trusted
        raise BackendUnavailableError(f"cannot build the ONNX MiniLM: {exc}") from exc


def _verify(model_dir: Path, graph: Path) -> None:
    """Refuse a graph whose vectors differ from the NumPy reference on a padded batch."""
    encoder = OnnxMiniLM(model_dir, graph)
    encodings = encoder._tokenizer.encode_batch(list(_PROBE))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    config = BertConfig.from_model_dir(model_dir)
    expected = pool_and_normalize(forward(config, load_weights(model_dir, config), ids, mask), mask)
    actual = encoder.encode(list(_PROBE), batch_size=len(_PROBE))
    diff = float(np.abs(actual - expected).max())
    if not diff <= MAX_EXPORT_DIFF:
        raise BackendUnavailableError(
            f"the ONNX MiniLM differs from the reference forward pass by {diff:.2e} "
            f"(> {MAX_EXPORT_DIFF})"
        )
