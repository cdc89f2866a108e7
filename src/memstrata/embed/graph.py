"""The ONNX graph of a BERT encoder, built from its weights with ``onnx``'s helpers.

No torch and no tracing: the graph is written node by node from the architecture
(embeddings, ``num_hidden_layers`` encoder layers of self-attention and a GELU
feed-forward block, each closed by a residual LayerNorm) and carries the checkpoint's
tensors as initializers. Its interface is what :class:`~memstrata.embed.onnx.OnnxMiniLM`
feeds: ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, ``(texts,
tokens)``) in, ``last_hidden_state`` (float32, ``(texts, tokens, hidden)``) out; the
mean pooling and the normalization run in NumPy after it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.bert import BertConfig, Weights, load_weights
from memstrata.errors import BackendUnavailableError

OPSET = 17  # the first opset with LayerNormalization
IR_VERSION = 8  # the IR that opset 17 came with: any ONNX Runtime since 1.11 reads it
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"
SELF = "attention.self"
HEADS = [0, 2, 1, 3]  # (texts, tokens, heads, size) <-> (texts, heads, tokens, size)
KEYS = [0, 2, 3, 1]  # (texts, tokens, heads, size) -> (texts, heads, size, tokens)


class _Builder:
    """Nodes and initializers in the order they are added; every output is fresh."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def tensor(self, name: str, array: NDArray[Any]) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, values: list[int] | float) -> str:
        if isinstance(values, float):
            return self.tensor(f"const_{len(self.initializers)}", np.array(values, np.float32))
        return self.tensor(f"const_{len(self.initializers)}", np.array(values, np.int64))

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [output], name=output, **attributes)
        )
        return output


def build_graph(config: BertConfig, weights: Weights) -> Any:
    """The ``onnx.ModelProto`` of the encoder ``config`` describes, holding ``weights``."""
    from onnx import TensorProto, helper

    g = _Builder()
    for name in (
        "embeddings.word_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.position_embeddings.weight",
    ):
        g.tensor(name, weights[name])

    def dense(x: str, name: str) -> str:
        # Stored (out, in) as torch's Linear; MatMul wants (in, out).
        kernel = g.tensor(f"{name}.kernel", weights[f"{name}.weight"].T)
        return g.op(
            "Add", g.op("MatMul", x, kernel), g.tensor(f"{name}.bias", weights[f"{name}.bias"])
        )

    def layer_norm(x: str, name: str) -> str:
        scale = g.tensor(f"{name}.weight", weights[f"{name}.weight"])
        shift = g.tensor(f"{name}.bias", weights[f"{name}.bias"])
        return g.op("LayerNormalization", x, scale, shift, axis=-1, epsilon=config.layer_norm_eps)

    # Embeddings: word + token type + the first `tokens` positions, then LayerNorm.
    words = g.op("Gather", "embeddings.word_embeddings.weight", "input_ids")
    types = g.op("Gather", "embeddings.token_type_embeddings.weight", "token_type_ids")
    tokens = g.op("Slice", g.op("Shape", "input_ids"), g.constant([1]), g.constant([2]))
    positions = g.op(
        "Slice", "embeddings.position_embeddings.weight", g.constant([0]), tokens, g.constant([0])
    )
    x = layer_norm(g.op("Add", g.op("Add", words, types), positions), "embeddings.LayerNorm")

    # Padding keys get the lowest float32 added to their scores, as in transformers.
    keep = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    padding = g.op("Sub", g.constant(1.0), keep)
    lowest = g.constant(float(np.finfo(np.float32).min))
    bias = g.op("Unsqueeze", g.op("Mul", padding, lowest), g.constant([1, 2]))

    heads, size = config.num_attention_heads, config.head_size
    split = g.constant([0, 0, heads, size])
    merge = g.constant([0, 0, config.hidden_size])
    scale = g.constant(size**-0.5)
    half, one, root2 = g.constant(0.5), g.constant(1.0), g.constant(math.sqrt(2.0))
    for layer in range(config.num_hidden_layers):
        p = f"encoder.layer.{layer}"
        # (texts, tokens, hidden) -> (texts, heads, tokens, size); keys transposed.
        q = g.op("Transpose", g.op("Reshape", dense(x, f"{p}.{SELF}.query"), split), perm=HEADS)
        k = g.op("Transpose", g.op("Reshape", dense(x, f"{p}.{SELF}.key"), split), perm=KEYS)
        v = g.op("Transpose", g.op("Reshape", dense(x, f"{p}.{SELF}.value"), split), perm=HEADS)
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=HEADS), merge)
        attended = g.op("Add", dense(context, f"{p}.attention.output.dense"), x)
        x = layer_norm(attended, f"{p}.attention.output.LayerNorm")
        # The exact GELU: x/2 * (1 + erf(x / sqrt 2)).
        inner = dense(x, f"{p}.intermediate.dense")
        erf = g.op("Erf", g.op("Div", inner, root2))
        gelu = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, one))
        out = g.op("Add", dense(gelu, f"{p}.output.dense"), x)
        x = layer_norm(out, f"{p}.output.LayerNorm")
    g.nodes.append(helper.make_node("Identity", [x], [OUTPUT], name=OUTPUT))

    dims: list[str | int] = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [*dims, config.hidden_size])],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="memstrata",
        ir_version=IR_VERSION,
    )
    return model


def write_graph(model_dir: Path, target: Path) -> None:
    """Build the graph of the BERT encoder in ``model_dir`` and write it to ``target``."""
    import onnx

    config = BertConfig.from_model_dir(model_dir)
    model = build_graph(config, load_weights(model_dir, config))
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise BackendUnavailableError(
            f"the ONNX graph built from {model_dir} is invalid: {exc}"
        ) from exc
    target.write_bytes(model.SerializeToString())
