"""The ONNX export memstrata made with torch before the graph was built without it.

Kept for the tests, which compare the torch-free graph against it; to regenerate the
stored reference vectors (``reference.npz``) that the tests use where torch is not
installed; and to compare the two graphs' speed in one process (docs/benchmarks.md):

    .venv/bin/python tests/embed/torch_export.py           # writes reference.npz
    .venv/bin/python tests/embed/torch_export.py --bench   # both graphs, same texts

needs the ``torch`` extra (``pip install -e '.[torch]'``).
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

REFERENCE = Path(__file__).with_name("reference.npz")

# English, Chinese, mixed, long (past the 256-token window), and nearly empty.
PROBE = (
    "I moved to Berlin last year for work",
    "The quarterly revenue report is due on Friday; send it to finance.",
    "我喜欢杭州的西湖",
    "我下个月搬到成都，预算是五千元。",
    "My flight CA1234 leaves 北京 at 08:30, 请提醒我 two hours before.",
    "emoji 🎉 and café, naïve résumé",
    "a long text that runs past the model's window " * 60,
    "长文本" * 400,
    "",
    " ",
    "x",
    "?",
)


def export(model_dir: Path, target: Path) -> None:
    """torch.onnx.export of the bundled BertModel (opset 17, dynamic batch and tokens),
    as memstrata.embed.onnx did with torch."""
    import torch
    from transformers import AutoModel

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

    names = ("input_ids", "attention_mask", "token_type_ids")
    ids = torch.tensor([[101, 7592, 2088, 2023, 102], [101, 7592, 102, 0, 0]])
    mask = (ids != 0).long()
    dynamic = {name: {0: "batch", 1: "tokens"} for name in (*names, "last_hidden_state")}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Hidden(bert),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            input_names=list(names),
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=17,
            dynamo=False,
        )


def _write_reference() -> int:
    from memstrata.embed.minilm import bundled_model_dir
    from memstrata.embed.onnx import OnnxMiniLM

    model_dir = bundled_model_dir()
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "torch.onnx"
        export(model_dir, graph)
        vectors = OnnxMiniLM(model_dir, graph).encode(list(PROBE), batch_size=4)
    np.savez_compressed(REFERENCE, texts=np.array(PROBE), vectors=vectors)
    print(f"wrote {REFERENCE}: {vectors.shape}")
    return 0


def _bench(rounds: int = 300) -> int:
    """Build both graphs, then time one-text queries on each, interleaved."""
    from memstrata.embed.minilm import bundled_model_dir
    from memstrata.embed.onnx import OnnxMiniLM, ensure_exported

    model_dir = bundled_model_dir()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        ours_path = ensure_exported(model_dir, Path(tmp) / "cache")
        built = time.perf_counter() - started
        started = time.perf_counter()
        theirs_path = Path(tmp) / "torch.onnx"
        export(model_dir, theirs_path)
        exported = time.perf_counter() - started
        graphs = {
            "built": OnnxMiniLM(model_dir, ours_path),
            "torch": OnnxMiniLM(model_dir, theirs_path),
        }
        query = "When did Margaret visit the NASA space museum last year?"
        docs = [
            f"document {i} about the weather in Hangzhou and Berlin " * (i % 5 + 1)
            for i in range(256)
        ]
        times: dict[str, list[float]] = {name: [] for name in graphs}
        for _ in range(rounds):
            for name, encoder in graphs.items():
                started = time.perf_counter()
                encoder.encode([query], batch_size=1)
                times[name].append(time.perf_counter() - started)
        batch: dict[str, float] = {}
        for name, encoder in graphs.items():
            started = time.perf_counter()
            encoder.encode(docs, batch_size=64)
            batch[name] = time.perf_counter() - started
        diff = np.abs(
            graphs["built"].encode(list(PROBE), 4) - graphs["torch"].encode(list(PROBE), 4)
        ).max()
    print(
        f"graph built without torch (build + check): {built:.1f} s; torch export: {exported:.1f} s"
    )
    for name, values in times.items():
        p50, p99 = np.percentile(np.array(values) * 1000, [50, 99])
        print(
            f"{name:>5}: one query p50 {p50:.2f} ms, p99 {p99:.2f} ms; 256 docs {batch[name]:.2f} s"
        )
    ratio = np.median(times["built"]) / np.median(times["torch"])
    print(f"p50 built / torch: {ratio:.2f}; max difference on the probe set: {diff:.1e}")
    return 0


def main() -> int:
    return _bench() if "--bench" in sys.argv[1:] else _write_reference()


if __name__ == "__main__":
    sys.exit(main())
