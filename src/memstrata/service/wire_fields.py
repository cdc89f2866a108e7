"""What each field of the wire means, in words a model (or a person) can act on.

The JSON schemas of the wire models (OpenAPI, the MCP tools' input schemas) take a
field's description from its docstring in :mod:`memstrata.service.wire`, else from
this table: by ``Model.field`` first, then by the field's name, which means the same
thing wherever it appears (``session_id``, ``user_id``, ``query``...). Plain data:
the client imports the wire models, never the engine.
"""

from __future__ import annotations

from typing import Any

_ID_NOTE = (
    "an opaque id: an identifier holding a credential or personal data (an e-mail "
    "address, a phone number) is refused"
)

BY_NAME: dict[str, str] = {
    "session_id": "The session's id, as start_session returned it (or as you chose it there).",
    "user_id": f"The end user this is about: {_ID_NOTE}.",
    "initial_query": "What the user asked when the session started (free text).",
    "advance": "Move the session this many steps forward.",
    "entity_id": "The entity (device, order, ticket...) the agent now works on.",
    "pointers": 'Named pointers to ids, e.g. {"report_template": "doc_17"}.',
    "api_result": "The last API call's status and data (L1 keeps a hash of the data only).",
    "status": "How the API call ended: success, error or timeout.",
    "data": "The API call's data (JSON); L1 keeps only its hash.",
    "action": "An action the agent took (L1 keeps its id and a hash of its payload).",
    "action_id": "The action's id.",
    "payload": "The action's parameters (JSON); only a hash is kept.",
    "role": "Who spoke: user, assistant, system or tool.",
    "text": "The text (credentials and personal data are redacted before it is stored).",
    "speaker": "Who said it, by name, when the role alone does not say (shown as 'said by').",
    "ids": "Memory ids, as retrieve or remember returned them.",
    "query": "What to look for, in natural language.",
    "k": "How many items to return.",
    "collection": "memories (what users said, and the facts drawn from it) or knowledge "
    "(ingested documents).",
    "include_history": "Also return superseded versions of facts.",
    "as_of": "Read memory as it stood at this instant (RFC 3339).",
    "step_intent": "The registered intent of this step (respond is always there): it says "
    "which context the step needs.",
    "user_input": "The user's current message.",
    "system_prompt": "Your system prompt; it is kept whole and comes first.",
    "model": "The model the context is for (its window and tokenizer), e.g. gpt-4o.",
    "history": "Earlier turns of the conversation, oldest first; older ones may be "
    "summarized to fit.",
    "tool_results": "Results of the tools called for this step.",
    "content": "The text.",
    "summary": "True for a summary of earlier turns (a summary is never summarized again).",
    "covers": "The ids of the turns a summary stands for.",
    "call_id": "The tool call's id.",
    "relevance": "How relevant it is, from 0 to 1 (orders what is admitted first).",
    "freshness_hours": "How old the data is, in hours.",
    "endpoint": "The API endpoint (or tool) the response came from.",
    "params": "The call's parameters (JSON).",
    "value": "The value (JSON).",
    "ttl_s": "How long it lives, in seconds.",
    "step_id": "The step's id (step<N> by convention).",
    "fields": "The step's result, as named JSON values.",
    "reader_step": "The step reading it: a dependent step's read extends the result's life.",
    "metric": "The metric's (sensor's) name.",
    "points": "The points to append, each a timestamp and a value.",
    "timestamp": "Seconds since the epoch.",
    "window": "How many of the newest points to keep.",
    "start": "Only points from this timestamp on.",
    "end": "Only points up to this timestamp.",
    "task_ids": "Ids of pending asynchronous tasks.",
    "documents": "The documents (an unchanged document ingested again changes nothing).",
    "format": "markdown, html or text.",
    "response": "The answer the user confirmed.",
    "source": "Where it comes from (an id or a name).",
    "namespace": "The shared namespace's name.",
    "purpose": "Why, in a sentence (free text, audited).",
    "owner": "The agent that owns it (default: the calling key's agent).",
    "mode": "read, or write (write includes read).",
    "agent": "The agent's name.",
    "item_id": "The item's id within the namespace.",
    "key": "The item's key within its namespace.",
    "namespace_prefix": "Only items under this namespace prefix (a path of labels).",
    "filter": "Conditions on the item's fields: equality, or $eq $ne $gt $gte $lt $lte.",
    "limit": "At most this many.",
    "offset": "Skip this many first.",
    "prefix": "Only namespaces starting with these labels (* matches any label).",
    "suffix": "Only namespaces ending with these labels (* matches any label).",
    "max_depth": "Cut the namespaces returned to this many labels.",
    "name": "The name.",
    "description": "What it does, for the decision layer and for whoever reads it.",
    "parameters": "The tool's parameters, as JSON Schema.",
    "risk": "low, medium or high: how sure a decision must be before it acts.",
    "high_impact": "True for refunds, sends and data changes: the call runs only after an "
    "explicit confirmation (confirm_tool).",
    "alternatives": "Tools to try, in order, when this one fails.",
    "bound": "Parameters that must equal facts the session holds: parameter -> "
    "l1.<field> or l2.<item>[.<key>].",
    "intent": "The intent the policy is for.",
    "evidence": "The sources that count as evidence (* for any).",
    "slots": "Key information the step needs before it acts.",
    "sources": "Where to look for it, in order: l1.<field>, l2.<item>[.<key>], given.<name>.",
    "question": "What to ask the user when it is missing.",
    "tool": "The tool's name.",
    "tool_params": "The tool's parameters and where each value comes from.",
    "card_id": "The decision's trace card id (decide returned it).",
    "pending_id": "The id of the call held for confirmation (call_tool returned it).",
    "confirmed": "True runs the held call; false rejects it.",
    "ok": "Whether the attempt succeeded.",
    "error": "What went wrong (free text).",
    "reply": "The reply you mean to send.",
    "since": "Only what happened since this instant (RFC 3339).",
    "until": "Only what happened up to this instant (RFC 3339).",
    "kind": "What the user did: confirmed, corrected, abandoned, or a rating.",
    "correction": "What the user says is right (kind corrected): it becomes a new fact.",
    "rating": "A rating from 1 to 5 (kind rating).",
    "clearance": "The highest permission level it may read: low, medium or high.",
    "rate_per_s": "Requests per second the key may make.",
    "key_id": "The key's id (list_keys shows it; never the secret).",
}

BY_MODEL_FIELD: dict[str, str] = {
    "StartSessionRequest.session_id": f"The session's id (default: a new one): {_ID_NOTE}.",
    "ObserveRequest.text": "What was said in the turn (credentials and personal data are "
    "redacted before it is stored).",
    "RememberRequest.text": "What to remember about the user, as they would say it "
    "(redacted like every stored text).",
    "TurnIn.role": "Who spoke: user, assistant or system.",
    "TurnIn.content": "What was said.",
    "TurnIn.id": "The turn's id, if you give turns ids.",
    "ToolResultIn.name": "The tool's name.",
    "ToolResultIn.content": "What the tool returned (as text).",
    "PutApiResponseRequest.params": "The call's parameters: the cache key is the endpoint "
    "and these.",
    "GetApiResponseRequest.params": "The parameters the response was cached under.",
    "PutApiResponseRequest.value": "The response to cache (JSON).",
    "PutApiResponseRequest.ttl_s": "Seconds the response stays (default 900).",
    "SeriesPointIn.value": "The point's value (JSON).",
    "DocumentIn.name": "The document's name or path: it becomes its chunks' source.",
    "DocumentIn.text": "The document's content.",
    "ConfirmKnowledgeRequest.query": "The question the user asked.",
    "CreateNamespaceRequest.purpose": "What the namespace is for (free text, audited).",
    "CreateNamespaceRequest.ttl_s": "Seconds each item written to it lives.",
    "AccessRequestIn.purpose": "Why the agent needs access (free text, audited).",
    "GrantRequest.agent": "The agent to give access to.",
    "RevokeAccessRequest.agent": "The agent whose access ends.",
    "PutSharedRequest.value": "The item's value (JSON).",
    "PutSharedRequest.level": "The item's permission level: only keys with at least this "
    "clearance see it.",
    "StorePutRequest.namespace": 'The item\'s namespace: a path of labels, e.g. ["notes", "u1"].',
    "StoreItemRef.namespace": "The item's namespace: a path of labels.",
    "StorePutRequest.value": "The item: a JSON object.",
    "StoreSearchRequest.query": "Rank the items by how well they match this (optional).",
    "ToolSpecModel.name": "The tool's name (your agents run it and report each attempt).",
    "SlotModel.name": "The key information's name.",
    "StepPolicyModel.tool": "The tool the step calls when it has what it needs.",
    "CallToolRequest.tool": "Call this tool instead of the decision's.",
    "CallToolRequest.params": "The tool's parameters (default: the decision's).",
    "ToolResultReportIn.tool": "The tool that ran.",
    "TraceCardsRequest.session_id": "Only the cards of this session.",
    "CreateKeyRequest.agent": "The agent the key is for.",
    "CreateKeyRequest.role": "The key's role, reader < writer < admin (at most your own).",
    "CreateKeyRequest.clearance": "The highest permission level the key may read (at most "
    "your own clearance).",
    "CreateKeyRequest.ttl_s": "Seconds until the key expires (none: never).",
}


def describe(schema: dict[str, Any], model: type[Any]) -> None:
    """Fill in the description of each property of ``model``'s schema that has none
    (a ``json_schema_extra`` hook of the wire models)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, prop in properties.items():
        if isinstance(prop, dict) and "description" not in prop:
            text = BY_MODEL_FIELD.get(f"{model.__name__}.{name}") or BY_NAME.get(name)
            if text is not None:
                prop["description"] = text
