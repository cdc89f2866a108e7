"""A BERT encoder read from a model directory: its configuration, its weights, and its
forward pass in NumPy.

The ONNX graph (:mod:`memstrata.embed.graph`) is built from the same configuration and
weights; the NumPy pass is the independent reference it is checked against before it
is used, so neither torch nor transformers is needed to run or to trust the model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import BackendUnavailableError

Weights = Mapping[str, NDArray[np.float32]]

# Hugging Face BertModel as saved by sentence-transformers (no "bert." prefix); a
# BertFor... checkpoint carries the prefix, which is dropped on load.
_PREFIX = "bert."
_GELU = ("gelu",)  # the exact (erf) GELU; the tanh approximations are other functions


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The shape of a BERT encoder, from its ``config.json``."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float

    @property
    def head_size(self) -> int:
        """Dimensions per attention head."""
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_model_dir(cls, model_dir: Path) -> BertConfig:
        """Read ``config.json``; a model this encoder cannot reproduce is refused with
        :class:`~memstrata.errors.BackendUnavailableError` naming the field."""
        path = model_dir / "config.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BackendUnavailableError(f"cannot read {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise BackendUnavailableError(f"{path}: must hold a JSON object")

        def field(name: str, kind: type[int] | type[float], default: float | None = None) -> Any:
            value = raw.get(name, default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise BackendUnavailableError(
                    f"{path}: {name} must be a {kind.__name__}, got {value!r}"
                )
            if not value > 0:
                raise BackendUnavailableError(f"{path}: {name} must be positive, got {value!r}")
            return value

        if raw.get("model_type") != "bert":
            raise BackendUnavailableError(
                f"{path}: model_type must be 'bert', got {raw.get('model_type')!r}"
            )
        if raw.get("hidden_act", "gelu") not in _GELU:
            raise BackendUnavailableError(
                f"{path}: hidden_act must be 'gelu', got {raw.get('hidden_act')!r}"
            )
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise BackendUnavailableError(
                f"{path}: position_embedding_type must be 'absolute', "
                f"got {raw.get('position_embedding_type')!r}"
            )
        config = cls(
            vocab_size=field("vocab_size", int),
            hidden_size=field("hidden_size", int),
            num_hidden_layers=field("num_hidden_layers", int),
            num_attention_heads=field("num_attention_heads", int),
            intermediate_size=field("intermediate_size", int),
            max_position_embeddings=field("max_position_embeddings", int, 512),
            type_vocab_size=field("type_vocab_size", int, 2),
            layer_norm_eps=field("layer_norm_eps", float, 1e-12),
        )
        if config.hidden_size % config.num_attention_heads:
            raise BackendUnavailableError(
                f"{path}: hidden_size {config.hidden_size} is not a multiple of "
                f"num_attention_heads {config.num_attention_heads}"
            )
        return config

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight the encoder needs, by its name in the checkpoint."""
        hidden, inner = self.hidden_size, self.intermediate_size
        shapes: dict[str, tuple[int, ...]] = {
            "embeddings.word_embeddings.weight": (self.vocab_size, hidden),
            "embeddings.position_embeddings.weight": (self.max_position_embeddings, hidden),
            "embeddings.token_type_embeddings.weight": (self.type_vocab_size, hidden),
            "embeddings.LayerNorm.weight": (hidden,),
            "embeddings.LayerNorm.bias": (hidden,),
        }
        for layer in range(self.num_hidden_layers):
            p = f"encoder.layer.{layer}"
            for name in ("query", "key", "value"):
                shapes[f"{p}.attention.self.{name}.weight"] = (hidden, hidden)
                shapes[f"{p}.attention.self.{name}.bias"] = (hidden,)
            shapes[f"{p}.attention.output.dense.weight"] = (hidden, hidden)
            shapes[f"{p}.attention.output.dense.bias"] = (hidden,)
            shapes[f"{p}.intermediate.dense.weight"] = (inner, hidden)
            shapes[f"{p}.intermediate.dense.bias"] = (inner,)
            shapes[f"{p}.output.dense.weight"] = (hidden, inner)
            shapes[f"{p}.output.dense.bias"] = (hidden,)
            for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
                shapes[f"{p}.{norm}.weight"] = (hidden,)
                shapes[f"{p}.{norm}.bias"] = (hidden,)
        return shapes


def load_weights(model_dir: Path, config: BertConfig) -> dict[str, NDArray[np.float32]]:
    """The encoder's weights from ``model.safetensors`` as float32 arrays, each checked
    against the shape ``config`` implies (extra tensors, such as a pooler, are ignored)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    path = model_dir / "model.safetensors"
    try:
        raw = load_file(str(path))
    except (OSError, SafetensorError, ValueError, TypeError) as exc:
        raise BackendUnavailableError(f"cannot read the weights {path}: {exc}") from exc
    tensors = {k.removeprefix(_PREFIX): v for k, v in raw.items()}
    weights: dict[str, NDArray[np.float32]] = {}
    for name, shape in config.shapes().items():
        tensor = tensors.get(name)
        if tensor is None:
            raise BackendUnavailableError(f"{path}: the tensor {name} is missing")
        if tuple(tensor.shape) != shape:
            raise BackendUnavailableError(
                f"{path}: {name} has shape {tuple(tensor.shape)}, expected {shape}"
            )
        if tensor.dtype.kind != "f":
            raise BackendUnavailableError(f"{path}: {name} is {tensor.dtype}, not a float")
        weights[name] = np.ascontiguousarray(tensor, dtype=np.float32)
    return weights


def attention_bias(mask: NDArray[np.int64]) -> NDArray[np.float32]:
    """``(texts, 1, 1, tokens)``: 0 where a token is read, the lowest float32 where it
    is padding (what transformers adds to the attention scores)."""
    keep = mask.astype(np.float32)[:, None, None, :]
    bias: NDArray[np.float32] = (np.float32(1.0) - keep) * np.finfo(np.float32).min
    return bias


def forward(
    config: BertConfig,
    weights: Weights,
    input_ids: NDArray[np.int64],
    attention_mask: NDArray[np.int64],
) -> NDArray[np.float32]:
    """The last hidden state ``(texts, tokens, hidden)`` of a padded batch, in float64
    arithmetic: a reference, not a fast path."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    tokens = input_ids.shape[1]
    x = (
        w["embeddings.word_embeddings.weight"][input_ids]
        + w["embeddings.token_type_embeddings.weight"][np.zeros_like(input_ids)]
        + w["embeddings.position_embeddings.weight"][:tokens][None]
    )
    x = _layer_norm(x, w, "embeddings.LayerNorm", config.layer_norm_eps)
    bias = attention_bias(attention_mask).astype(np.float64)
    heads, size = config.num_attention_heads, config.head_size
    erf = np.vectorize(math.erf, otypes=[np.float64])

    def split(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return t.reshape(t.shape[0], tokens, heads, size).transpose(0, 2, 1, 3)

    for layer in range(config.num_hidden_layers):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            split(_dense(x, w, f"{p}.attention.self.{n}")) for n in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) * size**-0.5 + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(x.shape)
        attended = _dense(context, w, f"{p}.attention.output.dense") + x
        x = _layer_norm(attended, w, f"{p}.attention.output.LayerNorm", config.layer_norm_eps)
        inner = _dense(x, w, f"{p}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
        out = _dense(inner, w, f"{p}.output.dense") + x
        x = _layer_norm(out, w, f"{p}.output.LayerNorm", config.layer_norm_eps)
    return np.ascontiguousarray(x, dtype=np.float32)


def _dense(x: NDArray[np.float64], w: Mapping[str, NDArray[np.float64]], name: str) -> Any:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _layer_norm(
    x: NDArray[np.float64], w: Mapping[str, NDArray[np.float64]], name: str, eps: float
) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w[f"{name}.weight"] + w[f"{name}.bias"]
