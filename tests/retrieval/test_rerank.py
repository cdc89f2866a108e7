"""CrossEncoderReranker: local files only, typed errors naming the path, one score per text.

The working model is a tiny random-weight BERT built offline in a temp dir (weights
meaningless, shapes real) with the tokenizer files of the bundled MiniLM.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from memstrata.errors import BackendUnavailableError
from memstrata.retrieval import CrossEncoderReranker

TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
NO_VECTOR = np.zeros(4, dtype=np.float32)  # a cross-encoder reads the texts only


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # belt and braces: the reranker passes local_files_only, and nothing may be fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def tiny_cross_encoder(path: Path, num_labels: int) -> Path:
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from memstrata.embed.minilm import bundled_model_dir

    source = Path(bundled_model_dir())
    if not all((source / name).is_file() for name in TOKENIZER_FILES):
        pytest.skip(f"bundled MiniLM tokenizer files not found under {source}")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,  # the MiniLM (bert-base-uncased) vocabulary
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=num_labels,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, path / name)
    return path


def test_a_missing_model_directory_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(BackendUnavailableError, match=str(missing)):
        CrossEncoderReranker(missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendUnavailableError, match="empty"):
        CrossEncoderReranker(tmp_path / "empty")


def test_an_unloadable_model_is_unavailable_not_downloaded(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    reranker = CrossEncoderReranker(broken)  # loaded lazily
    assert reranker.scores("q", NO_VECTOR, [], []) == []  # nothing to score: no load
    with pytest.raises(BackendUnavailableError, match="broken"):
        reranker.scores("q", NO_VECTOR, ["a text"], [0.0])


@pytest.mark.parametrize("num_labels", [1, 2])
def test_a_local_cross_encoder_gives_one_finite_score_per_text(
    tmp_path: Path, num_labels: int
) -> None:
    model_dir = tiny_cross_encoder(tmp_path / "ce", num_labels)
    reranker = CrossEncoderReranker(model_dir, max_length=32, batch_size=2)
    texts = ["Anna drinks green tea", "Bob plays chess", "x " * 200, "短文本"]
    scores = reranker.scores("what does Anna drink?", NO_VECTOR, texts, [0.0] * 4)
    assert len(scores) == len(texts)
    assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
    again = reranker.scores("what does Anna drink?", NO_VECTOR, texts, [0.0] * 4)
    assert again == pytest.approx(scores)  # deterministic (eval mode, same weights)
