"""Prints what the multilingual route's settings were chosen with on the bilingual probe
set (tests/retrieval/bilingual_probe.py): raw multilingual cosines of each question's
answer and of an unrelated question's best match, per question language, and the
probe's hit@1 / hit@3 and flags for some fusion weights.

Run: ``.venv/bin/python -m tests.retrieval.tune_languages`` (loads both models; ~1 min).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from tests.retrieval.bilingual_probe import MEMORIES as TEXTS
from tests.retrieval.bilingual_probe import RELATED, UNRELATED

from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.defaults import default_embedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.language import detect_language
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.results import RetrievalQuery
from memstrata.retrieval.retriever import Retriever


def raw_cosines() -> None:
    model = MultilingualEmbedder()
    memories = model.embed(list(TEXTS))
    by_lang: dict[str, list[float]] = {}
    for question, answer in RELATED:
        q = model.embed([question])[0]
        key = f"{detect_language(question)}->{detect_language(answer)}"
        by_lang.setdefault(key, []).append(float(q @ memories[TEXTS.index(answer)]))
    for question in UNRELATED:
        q = model.embed([question])[0]
        key = f"{detect_language(question)} unrelated (best)"
        by_lang.setdefault(key, []).append(float(np.max(memories @ q)))
    for key, values in sorted(by_lang.items()):
        print(
            f"{key:24s} n={len(values):2d} min={min(values):.3f} "
            f"median={statistics.median(values):.3f} max={max(values):.3f}"
        )


def probe(longterm: LongTermSettings, retrieval: RetrievalSettings, label: str) -> None:
    with tempfile.TemporaryDirectory() as where:
        store = LongTermStore(
            EdgeIndex(Path(where)),
            default_embedder(),
            Bm25Encoder(),
            longterm,
            multilingual=CachedEmbedder(MultilingualEmbedder()),
        )
        store.add(MEMORIES, [NewItem(t, tenant="t", user="u", type="episode") for t in TEXTS])
        reader = Retriever(store, store.embedder, retrieval, longterm)
        hit1 = hit3 = flagged_related = 0
        for question, answer in RELATED:
            result = reader.retrieve(RetrievalQuery(question, tenant="t", user="u", k=3))
            texts = [i.text for i in result.items]
            hit1 += bool(texts) and texts[0] == answer
            hit3 += answer in texts
            flagged_related += result.l3_skipped or bool(
                result.items and result.items[0].low_confidence
            )
        flagged = 0
        for question in UNRELATED:
            result = reader.retrieve(RetrievalQuery(question, tenant="t", user="u", k=3))
            flagged += result.l3_skipped or bool(result.items and result.items[0].low_confidence)
        store.close()
    n = len(RELATED)
    print(
        f"{label:40s} hit@1 {hit1 / n:.2f} hit@3 {hit3 / n:.2f} related flagged "
        f"{flagged_related}/{n} unrelated flagged {flagged}/{len(UNRELATED)}"
    )


def main(argv: list[str]) -> int:
    raw_cosines()
    base = LongTermSettings()
    for sparse in (1.0, 0.3, 0.15, 0.05):
        for cross in (1.0, 2.0, 2.5, 3.0):
            longterm = dataclasses.replace(
                base, multilingual_sparse_weight=sparse, multilingual_cross_weight=cross
            )
            probe(longterm, RetrievalSettings(), f"zh sparse {sparse} cross {cross}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
