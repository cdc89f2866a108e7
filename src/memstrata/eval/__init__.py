"""The evaluation harness: retrieval quality on LoCoMo and LongMemEval, and CER.

``memstrata eval locomo`` / ``memstrata eval longmemeval`` / ``memstrata eval
bilingual`` (our own Chinese and mixed Chinese/English set) run it from the command
line; the pieces are usable on their own: loaders returning frozen values
(:mod:`~memstrata.eval.datasets`), pure metrics (:mod:`~memstrata.eval.metrics`),
the context effectiveness rate (:mod:`~memstrata.cer`), the system protocol
and the store-backed systems (:mod:`~memstrata.eval.systems`), and the runners.
"""

from memstrata.cer import (
    StepOutcome,
    cer,
    cer_summary,
    content_words,
    context_loaded,
    context_used,
    is_reflected,
)
from memstrata.eval.command import run_bilingual, run_locomo, run_longmemeval
from memstrata.eval.datasets import (
    LmeQuestion,
    LmeTurn,
    LocomoConversation,
    LocomoQuestion,
    Turn,
    load_locomo,
    load_longmemeval,
)
from memstrata.eval.locomo import evaluate_locomo
from memstrata.eval.longmemeval import evaluate_longmemeval
from memstrata.eval.metrics import evidence_recall, hit_all, hit_any, ndcg, recall_all, recall_any
from memstrata.eval.systems import (
    EvalSystem,
    Retrieved,
    SearchFn,
    StoreSystem,
    TurnStore,
    store_systems,
)

__all__ = [
    "EvalSystem",
    "LmeQuestion",
    "LmeTurn",
    "LocomoConversation",
    "LocomoQuestion",
    "Retrieved",
    "SearchFn",
    "StepOutcome",
    "StoreSystem",
    "Turn",
    "TurnStore",
    "cer",
    "cer_summary",
    "content_words",
    "context_loaded",
    "context_used",
    "evaluate_locomo",
    "evaluate_longmemeval",
    "evidence_recall",
    "hit_all",
    "hit_any",
    "is_reflected",
    "load_locomo",
    "load_longmemeval",
    "ndcg",
    "recall_all",
    "recall_any",
    "run_bilingual",
    "run_locomo",
    "run_longmemeval",
    "store_systems",
]
