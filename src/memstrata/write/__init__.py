"""The write path: a turn's way from ``observe()`` to L3, one module per stage.

Read the modules in the order a turn flows through them:

1. :mod:`~memstrata.write.intake`: ``observe`` / ``remember`` validate, pass the text
   through the gateway, record the turn in L1 and make episodes (one per chunk);
2. :mod:`~memstrata.write.submit`: the episodes (or a unit, or a feedback event) become
   queue entries (:mod:`~memstrata.write.payloads`), enqueued; the caller gets a
   :class:`~memstrata.write.submit.WriteReceipt` at once;
3. :mod:`~memstrata.write.queue` (keys and codecs in :mod:`~memstrata.write.entries`):
   the durable Redis Stream, at-least-once;
4. :mod:`~memstrata.write.consume`: a :class:`~memstrata.write.consume.QueueWorker`
   (a thread of the engine, or a ``python -m memstrata.worker`` process) takes
   batches; the engine's threads keep one user's entries in order
   (:mod:`~memstrata.write.order`), and hold a batch through an outage of ours
   (:class:`~memstrata.write.submit.OutageWatch`) instead of spending its deliveries;
5. :mod:`~memstrata.write.handle`: per batch, the episodes decoded, filtered for what
   is worth remembering, read by the extractor (:mod:`memstrata.extract`), embedded in
   one call;
6. :mod:`~memstrata.write.commit`: the batch's facts, versioned per slot and committed
   together (the store model: :mod:`memstrata.memory`);
7. :mod:`~memstrata.write.index`: the episodes' vectors with their neighbours' context,
   written with the facts to L3 in one upsert.

This package imports neither the router nor the decision layer: what it needs of a
feedback event lives below both (:mod:`memstrata.feedback.events`).
(docs/architecture.md, "The writer")
"""
