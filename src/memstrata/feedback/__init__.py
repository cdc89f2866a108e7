"""The feedback loop's values (docs/architecture.md, "Decisions and feedback"), below
the decision layer and the write path: :mod:`~memstrata.feedback.events` (the event, its
codec and plan, the processed record) and :mod:`~memstrata.feedback.report` (what keeps
missing the right memory)."""
