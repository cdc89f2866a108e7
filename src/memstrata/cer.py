"""Context effectiveness rate (CER) as pure functions (docs/architecture.md, "Health and
metrics").

    CER = steps where context was correctly loaded AND used / total steps

*Loaded* (:func:`context_loaded`): every required L2 key was present and
unexpired, and - when the step needs long-term memory - L3 returned at least one
item whose confidence is at or above the low-confidence threshold.
*Used* (:func:`context_used`): the context is reflected in the output, judged by
the rule-based matcher :func:`is_reflected`. A step whose output contradicts its
context (the reply check found a conflict, :mod:`memstrata.decision.consistency`) is
never effective, however well its context was loaded and reflected: the
contradiction reflects the context too ("you have no peanut allergy").

The matcher's rule: both texts are reduced to *content words* - lowercased
(NFKC), split into runs of letters and digits, English function words dropped, a
plural ``s`` stripped from words longer than three letters (``paintings`` ->
``painting``), and runs of CJK ideographs split into character bigrams (Chinese
has no spaces; a single ideograph stays as it is). A reference is reflected in a
text when at least ``min_overlap`` (default one half) of the reference's distinct
content words occur in the text. A reference without any content word (``"the"``,
punctuation) is never reflected: nothing can be checked.

The evaluation harness applies it in the other direction: a QA step's retrieved
context "uses" the gold answer when the answer is reflected in that context.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

DEFAULT_MIN_OVERLAP = 0.5

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")

# Function words that carry no content on their own; deliberately short.
_STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her him his
    i if in into is it its me my no not of on or our she so than that the their them then
    there these they this those to us was we were what when where which who whom why will
    with would you your about""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """Whether one agent step's context was correctly loaded and then used."""

    loaded: bool
    used: bool
    step: str = ""
    """An optional label (step id, question id) for reports."""
    consistent: bool = True
    """False when the output contradicts the context (a reply-check conflict)."""

    @property
    def effective(self) -> bool:
        """Loaded and used by a consistent output: the numerator of CER."""
        return self.loaded and self.used and self.consistent


def cer(steps: Sequence[StepOutcome]) -> float:
    """Share of ``steps`` whose context was loaded and used; needs at least one step."""
    if not steps:
        raise ValueError("steps: CER of no steps is undefined")
    return sum(1 for s in steps if s.effective) / len(steps)


def cer_summary(steps: Sequence[StepOutcome], *, digits: int = 4) -> dict[str, float | int | None]:
    """``{"cer", "loaded_rate", "used_rate", "steps"}``; rates are None for no steps."""
    n = len(steps)
    if n == 0:
        return {"cer": None, "loaded_rate": None, "used_rate": None, "steps": 0}
    return {
        "cer": round(cer(steps), digits),
        "loaded_rate": round(sum(1 for s in steps if s.loaded) / n, digits),
        "used_rate": round(sum(1 for s in steps if s.used) / n, digits),
        "steps": n,
    }


def l3_confident(confidences: Iterable[float | None], threshold: float) -> bool:
    """True when some L3 result reaches ``threshold``.

    A result of unknown confidence (``None``, a retriever that reports none) counts
    as confident: it was returned, and nothing says it should be doubted.
    """
    return any(c is None or c >= threshold for c in confidences)


def context_loaded(
    *,
    required_l2_keys: Collection[str] = (),
    present_l2_keys: Collection[str] = (),
    l3_confidences: Sequence[float | None] | None = None,
    threshold: float,
) -> bool:
    """CER's "correctly loaded" (docs/architecture.md, "Health and metrics").

    ``present_l2_keys`` are the keys read back present and unexpired;
    ``l3_confidences`` are the confidences of the L3 results, or None when the step
    does not use L3 at all (an empty sequence means L3 was asked and found nothing).
    """
    if not set(required_l2_keys) <= set(present_l2_keys):
        return False
    return l3_confidences is None or l3_confident(l3_confidences, threshold)


def content_words(text: str) -> frozenset[str]:
    """The normalized content words of ``text`` (see the module docstring)."""
    words: set[str] = set()
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).lower()):
        cjk = match.group("cjk")
        if cjk is not None:
            words.update([cjk] if len(cjk) == 1 else (cjk[i : i + 2] for i in range(len(cjk) - 1)))
            continue
        word = match.group("word")
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return frozenset(words)


def overlap(reference: str, text: str) -> float:
    """Share of ``reference``'s content words that occur in ``text`` (0 when it has none)."""
    wanted = content_words(reference)
    if not wanted:
        return 0.0
    return len(wanted & content_words(text)) / len(wanted)


def is_reflected(reference: str, text: str, *, min_overlap: float = DEFAULT_MIN_OVERLAP) -> bool:
    """True when at least ``min_overlap`` of ``reference``'s content words are in ``text``."""
    if not 0.0 < min_overlap <= 1.0:
        raise ValueError("min_overlap: must be within (0, 1]")
    return bool(content_words(reference)) and overlap(reference, text) >= min_overlap


def context_used(
    context: Sequence[str],
    output: str,
    *,
    require_all: bool = False,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
) -> bool:
    """CER's "used": the context pieces are reflected in ``output``
    (docs/architecture.md, "Health and metrics").

    By default one reflected piece is enough; ``require_all`` demands every piece.
    No context at all is never "used".
    """
    if not context:
        return False
    found = (is_reflected(piece, output, min_overlap=min_overlap) for piece in context)
    return all(found) if require_all else any(found)
