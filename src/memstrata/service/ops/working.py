"""Working memory (L2): API responses, step results, sensor windows, pending tasks."""

from __future__ import annotations

from typing import Any

from memstrata.errors import (
    ContextMissError,
)
from memstrata.permissions import L2_LEVEL
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import (
    SESSION_ERRORS,
    Call,
    Operation,
)
from memstrata.service.ops.clearance import require


def _working(call: Call, session_id: str, *, reads: bool = False) -> Any:
    if reads:
        require(call, L2_LEVEL, "working memory (L2)")
    call.session(session_id)
    return call.engine.working(call.engine_session_id(session_id))


def _put_api_response(call: Call, req: m.PutApiResponseRequest) -> m.WorkingItemOut:
    wm = _working(call, req.session_id)
    return convert.working_item_out(
        wm.put_api_response(req.endpoint, req.params, req.value, ttl_s=req.ttl_s)
    )


def _get_api_response(call: Call, req: m.GetApiResponseRequest) -> m.WorkingItemOut:
    return convert.working_item_out(
        _working(call, req.session_id, reads=True).get_api_response(req.endpoint, req.params)
    )


def _put_step_result(call: Call, req: m.PutStepResultRequest) -> m.WorkingItemOut:
    return convert.working_item_out(
        _working(call, req.session_id).put_step_result(req.step_id, req.fields)
    )


def _get_step_result(call: Call, req: m.GetStepResultRequest) -> m.WorkingItemOut:
    wm = _working(call, req.session_id, reads=True)
    return convert.working_item_out(wm.get_step_result(req.step_id, req.reader_step))


def _append_series(call: Call, req: m.AppendSeriesRequest) -> m.AppendSeriesResult:
    wm = _working(call, req.session_id)
    points = convert.series_in(req.points)
    return m.AppendSeriesResult(kept=wm.append_series(req.metric, points, window=req.window))


def _read_series(call: Call, req: m.ReadSeriesRequest) -> m.SeriesOut:
    points = _working(call, req.session_id, reads=True).read_series(req.metric, req.start, req.end)
    return convert.series_out(points)


def _add_pending(call: Call, req: m.PendingRequest) -> m.PendingOut:
    wm = _working(call, req.session_id, reads=True)  # answers with every pending task
    added = wm.add_pending(*req.task_ids)
    return convert.pending_out(wm.pending(), added)


def _complete_pending(call: Call, req: m.PendingRequest) -> m.PendingOut:
    wm = _working(call, req.session_id, reads=True)  # answers with every pending task
    done = sum(1 for task in req.task_ids if wm.complete_pending(task))
    return convert.pending_out(wm.pending(), done)


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "put_api_response",
        "Cache a tool/API response in L2 with a TTL.",
        m.PutApiResponseRequest,
        m.WorkingItemOut,
        "writer",
        _put_api_response,
        SESSION_ERRORS,
    ),
    Operation(
        "get_api_response",
        "Read a cached tool/API response from L2.",
        m.GetApiResponseRequest,
        m.WorkingItemOut,
        "reader",
        _get_api_response,
        (*SESSION_ERRORS, ContextMissError),
    ),
    Operation(
        "put_step_result",
        "Store a step's result in L2.",
        m.PutStepResultRequest,
        m.WorkingItemOut,
        "writer",
        _put_step_result,
        SESSION_ERRORS,
    ),
    Operation(
        "get_step_result",
        "Read a step's result from L2.",
        m.GetStepResultRequest,
        m.WorkingItemOut,
        "reader",
        _get_step_result,
        (*SESSION_ERRORS, ContextMissError),
    ),
    Operation(
        "append_series",
        "Append points to a sensor/metric window in L2.",
        m.AppendSeriesRequest,
        m.AppendSeriesResult,
        "writer",
        _append_series,
        SESSION_ERRORS,
    ),
    Operation(
        "read_series",
        "Read a sensor/metric window from L2.",
        m.ReadSeriesRequest,
        m.SeriesOut,
        "reader",
        _read_series,
        SESSION_ERRORS,
    ),
    Operation(
        "add_pending",
        "Register pending asynchronous tasks.",
        m.PendingRequest,
        m.PendingOut,
        "writer",
        _add_pending,
        SESSION_ERRORS,
    ),
    Operation(
        "complete_pending",
        "Mark pending tasks done.",
        m.PendingRequest,
        m.PendingOut,
        "writer",
        _complete_pending,
        SESSION_ERRORS,
    ),
)
