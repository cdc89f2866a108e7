"""Upkeep of long-term memory: consolidation (dedupe, compress, cold storage) and
deletion everywhere (``forget``, its L2 half in :mod:`~memstrata.upkeep.erase`)."""
