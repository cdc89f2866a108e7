"""The ONNX graph built from the bundled weights without torch: the same vectors as the
torch export it replaced, checked before use, and refused for models it cannot build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memstrata.embed.bert import BertConfig, forward, load_weights
from memstrata.embed.graph import write_graph
from memstrata.embed.minilm import bundled_model_dir
from memstrata.embed.onnx import MAX_EXPORT_DIFF, OnnxMiniLM, ensure_exported
from memstrata.embed.tokens import pool_and_normalize
from memstrata.errors import BackendUnavailableError

# The vectors of today's torch export on the probe set (texts stored with them),
# written by tests/embed/torch_export.py.
REFERENCE = Path(__file__).with_name("reference.npz")
TORCH_MODULES = ("torch", "transformers", "sentence_transformers")


@pytest.fixture(scope="module")
def built_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A graph built (and verified) into an empty cache: nothing reused from elsewhere."""
    return ensure_exported(bundled_model_dir(), tmp_path_factory.mktemp("graph"))


def _probe() -> tuple[list[str], np.ndarray]:
    stored = np.load(REFERENCE)
    return [str(t) for t in stored["texts"]], stored["vectors"]


def test_the_probe_set_covers_the_cases() -> None:
    texts, vectors = _probe()
    assert vectors.shape == (len(texts), 384)
    assert any(any("\u4e00" <= c <= "\u9fff" for c in t) for t in texts)  # Chinese
    assert any(t.isascii() and t.strip() for t in texts)  # English
    assert max(len(t) for t in texts) > 1000  # past the 256-token window
    assert "" in texts and " " in texts  # empty-ish


def test_the_graph_gives_the_vectors_of_the_torch_export(built_graph: Path) -> None:
    texts, expected = _probe()
    encoder = OnnxMiniLM(bundled_model_dir(), built_graph)
    for batch_size in (1, 4, len(texts)):  # other paddings, same vectors
        actual = encoder.encode(texts, batch_size=batch_size)
        assert float(np.abs(actual - expected).max()) <= MAX_EXPORT_DIFF


@pytest.mark.torch
def test_the_graph_matches_a_live_torch_export(built_graph: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import torch_export
    finally:
        sys.path.remove(str(Path(__file__).parent))
    model_dir = bundled_model_dir()
    exported = tmp_path / "torch.onnx"
    torch_export.export(model_dir, exported)
    texts, _ = _probe()
    ours = OnnxMiniLM(model_dir, built_graph)
    theirs = OnnxMiniLM(model_dir, exported)
    diff = np.abs(ours.encode(texts, batch_size=4) - theirs.encode(texts, batch_size=4)).max()
    assert float(diff) <= MAX_EXPORT_DIFF
    for text in texts[:3]:  # the token vectors too, not only their mean
        a, b = ours.token_vectors(text), theirs.token_vectors(text)
        assert a.offsets == b.offsets
        assert float(np.abs(a.vectors - b.vectors).max()) <= 1e-4


def test_the_graph_agrees_with_the_numpy_forward_pass(built_graph: Path) -> None:
    model_dir = bundled_model_dir()
    encoder = OnnxMiniLM(model_dir, built_graph)
    texts = ["padding makes this batch uneven", "短", "x"]
    encodings = encoder._tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    config = BertConfig.from_model_dir(model_dir)
    hidden = forward(config, load_weights(model_dir, config), ids, mask)
    reference = pool_and_normalize(hidden, mask)
    assert float(np.abs(encoder.encode(texts, batch_size=3) - reference).max()) <= 1e-5


def test_the_default_embedder_builds_and_runs_without_torch(tmp_path: Path) -> None:
    # A child process in which torch, transformers and sentence-transformers cannot be
    # imported, with an empty model cache: the graph is built, checked and used.
    texts, expected = _probe()
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    code = f"""
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TORCH_MODULES!r}:
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Block())
import numpy as np
from memstrata.embed.minilm import MiniLMEmbedder
texts = json.load(open({str(tmp_path / "texts.json")!r}, encoding="utf-8"))
embedder = MiniLMEmbedder()
np.save({str(tmp_path / "vectors.npy")!r}, embedder.embed(texts))
print(embedder.runtime, sorted(m for m in sys.modules if m.split(".")[0] in {TORCH_MODULES!r}))
"""
    env = {
        **os.environ,
        "MEMSTRATA_MODEL_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["onnx", "[]"]
    assert len(list((tmp_path / "cache").glob("*.onnx"))) == 1
    vectors = np.load(tmp_path / "vectors.npy")
    assert float(np.abs(vectors - expected).max()) <= MAX_EXPORT_DIFF


def _model_copy(tmp_path: Path, **config: object) -> Path:
    model_dir = tmp_path / "model"
    shutil.copytree(bundled_model_dir(), model_dir)
    path = model_dir / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}), encoding="utf-8")
    return model_dir


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hidden_act": "relu"}, "hidden_act"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"model_type": "roberta"}, "model_type"),
        ({"num_attention_heads": 5}, "num_attention_heads"),
        ({"hidden_size": "384"}, "hidden_size"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ],
)
def test_a_model_the_graph_cannot_reproduce_is_refused_naming_the_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    model_dir = _model_copy(tmp_path, **change)
    with pytest.raises(BackendUnavailableError, match=field):
        write_graph(model_dir, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_weights_of_another_shape_are_refused_naming_the_tensor(tmp_path: Path) -> None:
    model_dir = _model_copy(tmp_path, intermediate_size=1024)
    with pytest.raises(BackendUnavailableError, match=r"intermediate\.dense\.weight"):
        write_graph(model_dir, tmp_path / "out.onnx")


def test_a_small_random_encoder_matches_its_numpy_forward_pass(tmp_path: Path) -> None:
    # Another shape than MiniLM's (2 layers, 4 heads of 4, "bert." prefixed names), so
    # the builder follows the configuration rather than MiniLM's numbers.
    from safetensors.numpy import save_file

    config = {
        "model_type": "bert",
        "vocab_size": 50,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 24,
        "max_position_embeddings": 20,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
    }
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    parsed = BertConfig.from_model_dir(tmp_path)
    rng = np.random.default_rng(7)
    shapes = parsed.shapes()
    weights = {name: rng.normal(0, 0.5, shape).astype(np.float32) for name, shape in shapes.items()}
    save_file({f"bert.{k}": v for k, v in weights.items()}, str(tmp_path / "model.safetensors"))
    write_graph(tmp_path, tmp_path / "small.onnx")

    import onnxruntime as ort

    session = ort.InferenceSession(str(tmp_path / "small.onnx"), providers=["CPUExecutionProvider"])
    ids = rng.integers(1, 50, (3, 9), dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = session.run(None, feeds)[0]
    reference = forward(parsed, load_weights(tmp_path, parsed), ids, mask)
    assert hidden.shape == (3, 9, 16)
    assert float(np.abs(hidden - reference).max()) <= 1e-4
