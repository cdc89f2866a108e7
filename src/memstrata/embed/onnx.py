"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors, three times faster per query.

A one-text query costs ~22 ms in torch on two cores and ~7 ms in ONNX Runtime
(docs/benchmarks.md). Nothing is downloaded: the ONNX graph is exported once from
the bundled weights (torch's exporter, needs ``onnx``), checked against torch on a
padded probe batch, and cached under ``cache_dir`` with a name derived from the
weights, the exporter and torch's version, so a new model or toolchain exports again.
The file is written to a temporary name and renamed, so concurrent processes never
read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.tokens import TokenVectors, pool_and_normalize
from memstrata.errors import BackendUnavailableError

EXPORT_VERSION = 1  # bump when the export recipe changes: old cache files are ignored
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Largest difference between the exported graph and torch accepted at export time
# (measured: ~3e-6 on unit vectors).
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
    """Where the exported graph of ``model_dir`` is cached (torch's version is part of
    the name, read from its metadata: importing torch alone takes seconds)."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    weights = model_dir / "model.safetensors"
    try:
        stat = weights.stat()
        config = (model_dir / "config.json").read_bytes()
    except OSError as exc:
        raise BackendUnavailableError(f"cannot read the MiniLM weights: {exc}") from exc
    digest = hashlib.sha256()
    for part in (str(stat.st_size), str(stat.st_mtime_ns), str(EXPORT_VERSION), str(OPSET)):
        digest.update(part.encode())
    digest.update(torch_version.encode())
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
    """The cached ONNX graph for ``model_dir``, exported and verified when missing."""
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
    import torch
    from transformers import AutoModel

    # A private copy in eager attention: the exporter traces Python control flow,
    # and the eager path has none that depends on the mask's values.
    bert = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # A padded batch, so the trace keeps the attention mask on a real path.
    ids = torch.tensor([[101, 7592, 2088, 2023, 102], [101, 7592, 102, 0, 0]])
    mask = (ids != 0).long()
    dynamic = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    try:
        # The tracer warns about shape arithmetic it keeps as constants; the probe
        # comparison in _verify is what decides whether the graph is right.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Hidden(bert),
                (ids, mask, torch.zeros_like(ids)),
                str(target),
                input_names=list(INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes=dynamic,
                opset_version=OPSET,
                dynamo=False,
            )
    except Exception as exc:
        raise BackendUnavailableError(f"cannot export MiniLM to ONNX: {exc}") from exc


def _verify(model_dir: Path, graph: Path) -> None:
    """Refuse a graph whose vectors differ from torch's on a padded batch."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    try:
        bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        batch = tokenizer(
            list(_PROBE),
            padding=True,
            truncation=True,
            max_length=max_seq_length(model_dir),
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = bert(**batch).last_hidden_state.numpy()
    except BackendUnavailableError:
        raise
    except Exception as exc:  # the reference run itself failed: no graph is trusted
        raise BackendUnavailableError(f"cannot check the ONNX MiniLM against torch: {exc}") from exc
    expected = pool_and_normalize(hidden, batch["attention_mask"].numpy())
    actual = OnnxMiniLM(model_dir, graph).encode(list(_PROBE), batch_size=len(_PROBE))
    diff = float(np.abs(actual - expected).max())
    if not diff <= MAX_EXPORT_DIFF:
        raise BackendUnavailableError(
            f"the exported ONNX MiniLM differs from torch by {diff:.2e} (> {MAX_EXPORT_DIFF})"
        )
