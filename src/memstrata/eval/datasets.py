"""Loaders for the evaluation data sets: LoCoMo and LongMemEval, as frozen values.

Both loaders validate the whole file before anything is indexed and raise
:class:`~memstrata.errors.DatasetError` naming the file, the first bad record
(its index and id) and the field, so a broken download is found in a second
rather than an hour into a run.

LoCoMo's evidence ids are repaired where the intent is unambiguous and dropped
otherwise, and every case is counted (see :func:`clean_evidence`): in
``locomo10.json`` a few records hold two ids in one string (``"D8:6; D9:17"``),
a stray colon (``"D:11:26"``), a zero-padded turn (``"D30:05"``), a bare ``"D"``,
or an id of a turn that does not exist.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstrata.errors import DatasetError

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL_CATEGORY = 5
ABSTENTION_SUFFIX = "_abs"


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn, the unit that is indexed and scored.

    ``text`` is what gets indexed (speaker, words, and a shared photo's caption);
    ``date_text`` is the session date as the data set writes it.
    """

    id: str
    session: str
    speaker: str
    text: str
    at: datetime
    date_text: str


@dataclass(frozen=True, slots=True)
class EvidenceIssue:
    """One evidence string that was not a clean id of an existing turn."""

    question: int
    raw: str
    problem: str  # "repaired" | "unparseable" | "dangling"
    kept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """A LoCoMo QA. ``evidence`` holds the cleaned ids of existing turns only."""

    index: int
    question: str
    category: int
    answer: str | None
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]

    @property
    def adversarial(self) -> bool:
        """Category 5: scored apart, never in the overall numbers."""
        return self.category == ADVERSARIAL_CATEGORY


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """One LoCoMo sample: its turns in order, its QAs and the evidence repairs made."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[LocomoQuestion, ...]
    evidence_issues: tuple[EvidenceIssue, ...]

    @property
    def last_date(self) -> datetime:
        """The date of the latest session: when the questions are asked."""
        return max(turn.at for turn in self.turns)


@dataclass(frozen=True, slots=True)
class LmeTurn:
    """A LongMemEval turn: ``Turn`` plus the data set's ``has_answer`` label."""

    turn: Turn
    has_answer: bool


@dataclass(frozen=True, slots=True)
class LmeQuestion:
    """One LongMemEval question with its own haystack of sessions."""

    index: int
    question_id: str
    question_type: str
    question: str
    question_date: datetime
    answer: str | None
    turns: tuple[LmeTurn, ...]
    session_ids: tuple[str, ...]
    answer_session_ids: tuple[str, ...]
    skipped_turns: int
    """Turns left out because their content was blank (nothing to index)."""
    repeated_sessions: int = 0
    """Haystack sessions folded into an earlier session with the same id and content:
    kept once, at the first one's date (the official LongMemEval_S file has some)."""
    redated_sessions: int = 0
    """Of those, the ones whose date differed from the first's (LongMemEval_S: 13
    filler sessions sampled twice, e.g. ``sharegpt_vyHqfrX_0`` of question 18bc8abd
    at 2023/04/10 and 2023/06/26)."""

    @property
    def abstention(self) -> bool:
        """Abstention questions (ids ending in ``_abs``) are excluded from scores."""
        return self.question_id.endswith(ABSTENTION_SUFFIX)


# --- dates ------------------------------------------------------------------------------

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, start=1)}
_LOCOMO_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_LME_DATE = re.compile(
    r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]{2,9}\))?\s+(\d{1,2}):(\d{2})\s*$"
)


def parse_locomo_date(text: str) -> datetime:
    """``"1:47 pm on 9 May, 2023"`` as an aware UTC datetime (the data has no zone)."""
    match = _LOCOMO_DATE.match(text)
    if match is None:
        raise ValueError(f"not a LoCoMo date like '1:47 pm on 9 May, 2023': {text!r}")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None or not 1 <= int(hour) <= 12:
        raise ValueError(f"not a LoCoMo date like '1:47 pm on 9 May, 2023': {text!r}")
    hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), hour24, int(minute), tzinfo=UTC)


def parse_lme_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` as an aware UTC datetime."""
    match = _LME_DATE.match(text)
    if match is None:
        raise ValueError(f"not a LongMemEval date like '2023/05/20 (Sat) 02:21': {text!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# --- evidence ---------------------------------------------------------------------------

_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)


def clean_evidence(
    raw: Sequence[str], turn_ids: Iterable[str], *, question: int = 0
) -> tuple[tuple[str, ...], tuple[EvidenceIssue, ...]]:
    """Cleaned evidence ids (existing turns, first-seen order) and the issues found.

    Rules, applied to each raw string:

    * every ``D<session>:<turn>`` inside it is taken, tolerating a stray colon after
      ``D`` and zero padding, so ``"D8:6; D9:17"`` gives two ids and ``"D:11:26"``
      gives ``D11:26`` (problem ``repaired`` when the string was not already one
      clean id);
    * a string with no such id (``"D"``) is dropped (``unparseable``);
    * an id that names no turn of the conversation is dropped (``dangling``).
    """
    known = set(turn_ids)
    kept: list[str] = []
    issues: list[EvidenceIssue] = []
    for item in raw:
        found = [f"D{int(s)}:{int(t)}" for s, t in _EVIDENCE_ID.findall(item)]
        if not found:
            issues.append(EvidenceIssue(question, item, "unparseable", ()))
            continue
        existing = tuple(i for i in found if i in known)
        if len(existing) < len(found):
            issues.append(EvidenceIssue(question, item, "dangling", existing))
        elif found != [item]:
            issues.append(EvidenceIssue(question, item, "repaired", existing))
        kept.extend(i for i in existing if i not in kept)
    return tuple(kept), tuple(issues)


def issue_counts(issues: Iterable[EvidenceIssue]) -> dict[str, int]:
    """How many evidence strings were repaired, unparseable, dangling."""
    counts = {"repaired": 0, "unparseable": 0, "dangling": 0}
    for issue in issues:
        counts[issue.problem] += 1
    return counts


# --- validation helpers -----------------------------------------------------------------


class _Record:
    """Raises :class:`DatasetError` for one record of one file."""

    def __init__(self, path: Path, index: int, ident: str | None = None) -> None:
        self.path = path
        self.index = index
        self.ident = ident

    def fail(self, field: str, reason: str) -> DatasetError:
        name = f"record {self.index}" + (f" ({self.ident})" if self.ident else "")
        return DatasetError(str(self.path), name, f"{field}: {reason}")

    def get(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], at: str) -> Any:
        field = f"{at}.{key}" if at else key
        if key not in obj:
            raise self.fail(field, "missing")
        value = obj[key]
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            raise self.fail(field, f"must be {_kind_name(kind)}, got bool")
        if not isinstance(value, kind):
            raise self.fail(field, f"must be {_kind_name(kind)}, got {type(value).__name__}")
        return value

    def strings(self, obj: Mapping[str, Any], key: str, at: str) -> tuple[str, ...]:
        values = self.get(obj, key, list, at)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.fail(f"{at}.{key}[{i}]" if at else f"{key}[{i}]", "must be a string")
        return tuple(values)


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        "str": "a string",
        "int": "an integer",
        "float": "a number",
        "list": "a list",
        "dict": "an object",
        "bool": "a boolean",
        "NoneType": "null",
    }
    return " or ".join(names.get(k.__name__, k.__name__) for k in _as_tuple(kind))


def _read_json_list(path: Path, what: str) -> list[Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(str(path), None, f"cannot read the {what} file: {exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DatasetError(str(path), None, f"not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise DatasetError(
            str(path),
            None,
            f"the top level must be a JSON list of {what} records, got {type(data).__name__}",
        )
    return data


def _answer_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(value)
    return value if isinstance(value, str) and value.strip() else None


# --- LoCoMo -----------------------------------------------------------------------------

_SESSION_KEY = re.compile(r"^session_(\d+)$")


def locomo_turn_text(speaker: str, text: str, caption: str | None) -> str:
    """The indexed text of a turn: speaker, words, and a shared photo's caption."""
    words = f"{speaker}: {text}".strip()
    return f"{words} [shares a photo: {caption.strip()}]" if caption and caption.strip() else words


def load_locomo(path: Path, *, limit: int | None = None) -> tuple[LocomoConversation, ...]:
    """Read a LoCoMo file (``locomo10.json``); ``limit`` keeps the first N conversations.

    The whole file is validated even with a limit, so a bad record is never
    discovered by a later, larger run.
    """
    records = _read_json_list(path, "LoCoMo conversation")
    conversations = [_locomo_record(Path(path), i, record) for i, record in enumerate(records)]
    return tuple(conversations if limit is None else conversations[:limit])


def _locomo_record(path: Path, index: int, record: Any) -> LocomoConversation:
    rec = _Record(path, index)
    if not isinstance(record, dict):
        raise rec.fail("record", f"must be an object, got {type(record).__name__}")
    sample_id = record.get("sample_id")
    if sample_id is not None and not isinstance(sample_id, str):
        raise rec.fail("sample_id", "must be a string")
    rec.ident = sample_id
    conversation = rec.get(record, "conversation", dict, "")
    turns = _locomo_turns(rec, conversation)
    qas = rec.get(record, "qa", list, "")
    turn_ids = [turn.id for turn in turns]
    questions: list[LocomoQuestion] = []
    issues: list[EvidenceIssue] = []
    for q, qa in enumerate(qas):
        at = f"qa[{q}]"
        if not isinstance(qa, dict):
            raise rec.fail(at, f"must be an object, got {type(qa).__name__}")
        question = rec.get(qa, "question", str, at)
        category = rec.get(qa, "category", int, at)
        if category not in (*LOCOMO_CATEGORIES, ADVERSARIAL_CATEGORY):
            raise rec.fail(f"{at}.category", f"must be 1-5, got {category}")
        raw_evidence = rec.strings(qa, "evidence", at)
        answer = qa.get("answer")
        if answer is not None and not isinstance(answer, str | int | float):
            raise rec.fail(f"{at}.answer", "must be a string, a number or null")
        evidence, found = clean_evidence(raw_evidence, turn_ids, question=q)
        issues.extend(found)
        questions.append(
            LocomoQuestion(q, question, category, _answer_text(answer), evidence, raw_evidence)
        )
    return LocomoConversation(sample_id or f"#{index}", turns, tuple(questions), tuple(issues))


def _locomo_turns(rec: _Record, conversation: Mapping[str, Any]) -> tuple[Turn, ...]:
    sessions: list[tuple[int, str]] = []
    for key, value in conversation.items():
        match = _SESSION_KEY.match(key)
        if match is None:
            continue
        if not isinstance(value, list):
            raise rec.fail(
                f"conversation.{key}", f"must be a list of turns, got {type(value).__name__}"
            )
        sessions.append((int(match.group(1)), key))
    sessions.sort()
    if not sessions:
        raise rec.fail("conversation", "has no session_<n> turn lists")
    turns: list[Turn] = []
    seen: set[str] = set()
    for _, key in sessions:
        date_text = rec.get(conversation, f"{key}_date_time", str, "conversation")
        try:
            at = parse_locomo_date(date_text)
        except ValueError as exc:
            raise rec.fail(f"conversation.{key}_date_time", str(exc)) from exc
        for t, turn in enumerate(conversation[key]):
            where = f"conversation.{key}[{t}]"
            if not isinstance(turn, dict):
                raise rec.fail(where, f"must be an object, got {type(turn).__name__}")
            dia_id = rec.get(turn, "dia_id", str, where)
            speaker = rec.get(turn, "speaker", str, where)
            text = rec.get(turn, "text", str, where)
            caption = turn.get("blip_caption")
            if caption is not None and not isinstance(caption, str):
                raise rec.fail(f"{where}.blip_caption", "must be a string")
            if dia_id in seen:
                raise rec.fail(f"{where}.dia_id", f"duplicate id {dia_id!r}")
            seen.add(dia_id)
            turns.append(
                Turn(dia_id, key, speaker, locomo_turn_text(speaker, text, caption), at, date_text)
            )
    return tuple(turns)


# --- LongMemEval ------------------------------------------------------------------------


def load_longmemeval(path: Path, *, limit: int | None = None) -> tuple[LmeQuestion, ...]:
    """Read a LongMemEval file; ``limit`` keeps the first N questions of the file
    (abstention questions included, then excluded from the scores).

    The whole file is validated even with a limit.
    """
    records = _read_json_list(path, "LongMemEval question")
    questions = [_lme_record(Path(path), i, record) for i, record in enumerate(records)]
    return tuple(questions if limit is None else questions[:limit])


def _lme_record(path: Path, index: int, record: Any) -> LmeQuestion:
    rec = _Record(path, index)
    if not isinstance(record, dict):
        raise rec.fail("record", f"must be an object, got {type(record).__name__}")
    question_id = rec.get(record, "question_id", str, "")
    rec.ident = question_id
    question_type = rec.get(record, "question_type", str, "")
    question = rec.get(record, "question", str, "")
    for field, value in (("question_id", question_id), ("question", question)):
        if not value.strip():
            raise rec.fail(field, "must not be empty")
    date_text = rec.get(record, "question_date", str, "")
    try:
        question_date = parse_lme_date(date_text)
    except ValueError as exc:
        raise rec.fail("question_date", str(exc)) from exc
    answer = record.get("answer")
    if answer is not None and not isinstance(answer, str | int | float):
        raise rec.fail("answer", "must be a string, a number or null")
    session_ids = rec.strings(record, "haystack_session_ids", "")
    dates = rec.strings(record, "haystack_dates", "")
    sessions = rec.get(record, "haystack_sessions", list, "")
    if not len(session_ids) == len(dates) == len(sessions):
        raise rec.fail(
            "haystack_sessions",
            f"haystack_session_ids ({len(session_ids)}), haystack_dates ({len(dates)}) and "
            f"haystack_sessions ({len(sessions)}) must have the same length",
        )
    answer_sessions = rec.strings(record, "answer_session_ids", "")
    turns: list[LmeTurn] = []
    skipped = 0
    first_at: dict[str, int] = {}
    kept_ids: list[str] = []
    redated = 0
    for s, (session_id, session_date, session) in enumerate(
        zip(session_ids, dates, sessions, strict=True)
    ):
        earlier = first_at.get(session_id)
        if earlier is not None:
            _check_repeat(rec, session_id, earlier, s, sessions)
            redated += dates[s] != dates[earlier]
            continue  # the same session again: indexed once, at its first date
        first_at[session_id] = s
        kept_ids.append(session_id)
        try:
            at = parse_lme_date(session_date)
        except ValueError as exc:
            raise rec.fail(f"haystack_dates[{s}]", str(exc)) from exc
        if not isinstance(session, list):
            raise rec.fail(f"haystack_sessions[{s}]", "must be a list of turns")
        for t, turn in enumerate(session):
            where = f"haystack_sessions[{s}][{t}]"
            if not isinstance(turn, dict):
                raise rec.fail(where, f"must be an object, got {type(turn).__name__}")
            role = rec.get(turn, "role", str, where)
            content = rec.get(turn, "content", str, where)
            has_answer = turn.get("has_answer", False)
            if not isinstance(has_answer, bool):
                raise rec.fail(f"{where}.has_answer", "must be a boolean")
            if not content.strip():
                skipped += 1
                continue
            turn_id = f"{session_id}#{t}"
            turns.append(
                LmeTurn(Turn(turn_id, session_id, role, content, at, session_date), has_answer)
            )
    return LmeQuestion(
        index=index,
        question_id=question_id,
        question_type=question_type,
        question=question,
        question_date=question_date,
        answer=_answer_text(answer),
        turns=tuple(turns),
        session_ids=tuple(kept_ids),
        answer_session_ids=answer_sessions,
        skipped_turns=skipped,
        repeated_sessions=len(session_ids) - len(kept_ids),
        redated_sessions=redated,
    )


def _check_repeat(
    rec: _Record,
    session_id: str,
    first: int,
    again: int,
    sessions: Sequence[Any],
) -> None:
    """A repeated haystack session id is accepted only as a copy of the first session
    with that id: the same turns (else its turns would be ambiguous). Its date may
    differ; the copy is folded into the first, at the first's date."""
    where = f"haystack_session_ids[{again}]"
    if sessions[again] != sessions[first]:
        raise rec.fail(
            f"haystack_sessions[{again}]",
            f"{where} repeats session id {session_id!r} of haystack_session_ids[{first}] "
            "with different content",
        )
