"""Multi-route retrieval: routes, fusion, context, time awareness, confidence, reranking."""

from memstrata.retrieval.rerank import CrossEncoderReranker, EmbeddingRescorer, Reranker
from memstrata.retrieval.results import RetrievalQuery, RetrievalResult, RetrievedItem
from memstrata.retrieval.retriever import Retriever
from memstrata.retrieval.routes import Route, build_routes, entities
from memstrata.retrieval.timeexpr import TimeWindow, resolve

__all__ = [
    "CrossEncoderReranker",
    "EmbeddingRescorer",
    "Reranker",
    "RetrievalQuery",
    "RetrievalResult",
    "RetrievedItem",
    "Retriever",
    "Route",
    "TimeWindow",
    "build_routes",
    "entities",
    "resolve",
]
