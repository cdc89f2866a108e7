"""One Prometheus exposition for ``serve --workers N``: each worker's scrape, its
samples labelled ``worker="<k>"``, and ``memstrata_worker_up`` for each worker.

Each worker counts what it served, so a counter or histogram summed over ``worker``
is the service's total. The workers share one Valkey: the L2 gauges
(``memstrata_l2_*``) each describe that one server, so take their ``max``, not their
sum.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

__all__ = ["WORKER_LABEL", "WORKER_UP", "merged_exposition"]

WORKER_LABEL = "worker"
WORKER_UP = "memstrata_worker_up"


class _Scraped:
    """A collector that yields already-parsed families (the registry renders them)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def _parsed(text: str | None) -> list[Metric] | None:
    """A worker's families; None when it did not answer or answered something else."""
    if text is None:
        return None
    try:
        return list(text_string_to_metric_families(text))
    except ValueError:
        return None


def merged_exposition(scrapes: Mapping[int, str | None]) -> bytes:
    """The text exposition of every worker's scrape (``None``: the worker did not
    answer; it counts as down, as does a scrape that is not an exposition); a family
    appears once, with the samples of every worker that has it."""
    families: dict[str, Metric] = {}
    up = GaugeMetricFamily(WORKER_UP, "1 when the worker answered this scrape.", labels=["worker"])
    for index, text in sorted(scrapes.items()):
        parsed = _parsed(text)
        up.add_metric([str(index)], 0.0 if parsed is None else 1.0)
        for family in parsed or ():
            merged = families.get(family.name)
            if merged is None:
                merged = families[family.name] = Metric(
                    family.name, family.documentation, family.type, family.unit
                )
            merged.samples.extend(
                Sample(s.name, {**s.labels, WORKER_LABEL: str(index)}, s.value, s.timestamp)
                for s in family.samples
            )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scraped([up, *families.values()]))
    return generate_latest(registry)
