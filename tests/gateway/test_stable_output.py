"""What the gateway returns is final: sanitizing it again changes nothing and finds
nothing (L3 refuses a text the gateway would still change, so an unstable redaction
is a write retried until it is dead-lettered). Checked over the dev split of the
redaction corpus and over texts where a value sits before its cue with more text after
it, the case that once took the text after the cue first."""

from __future__ import annotations

import random
import uuid

import pytest

from memstrata.eval.redaction import load_rows
from memstrata.gateway import Sanitizer
from memstrata.gateway.scan import find_matches

EXTRA = [
    "I use Marmot7Willow as my password harmless-marker-31c7",
    "we encrypt the backups with Kq8zLm2Wx9Pv4Tn7Rb1Yc5 as the passphrase key for now",
    "用Otter3Meadow作密码 harmless-marker",
    "password:\nKestrel4Lagoon harmless-marker-31c7",
    "ｍｙ ｐａｓｓｗｏｒｄ ｉｓ Ｐｅｌｉｃａｎ８Ｃｏｖｅ harmless-marker-31c7",
]


@pytest.mark.parametrize("texts", ["dev", "extra"])
def test_sanitized_text_is_final(texts: str) -> None:
    sanitizer = Sanitizer()
    rows = [r["text"] for r in load_rows("dev")] if texts == "dev" else EXTRA
    unstable = []
    for text in rows:
        once = sanitizer.text(text, location="test")
        if find_matches(once) or sanitizer.text(once, location="test") != once:
            unstable.append(text)
    assert not unstable


def test_the_value_before_its_cue_is_taken_not_the_text_after() -> None:
    out = Sanitizer().text(EXTRA[0], location="test")
    assert out == "I use [REDACTED:password] as my password harmless-marker-31c7"


def test_generated_ids_hold_no_finding() -> None:
    """Memory ids are uuids and pass the gateway on a trace card: digit runs inside them
    ("68441088-1836-4109-…", "…-5278-5…") are parts of an id, never a card or a phone."""
    ids = [str(uuid.uuid5(uuid.NAMESPACE_DNS, str(i))) for i in range(5000)]
    ids += [str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4)) for i in range(5000)]
    found = [i for i in ids if find_matches(i)]
    assert not found
