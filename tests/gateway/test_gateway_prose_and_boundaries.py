"""Passwords said in prose, whole values at their boundaries, and identifiers (issue 23,
"Why" case 5): exact outputs, so a partial redaction cannot pass."""

from __future__ import annotations

import pytest

from memstrata.gateway import FieldPolicy, Kind, Sanitizer

REDACTED = "[REDACTED:password]"

PROSE = {
    # English
    "my password is Tr0ub4dor&3": f"my password is {REDACTED}",
    "My password is Tr0ub4dor&3.": f"My password is {REDACTED}",
    "The password for the VPN was Hj4%uR9wEe, ok?": f"The password for the VPN was {REDACTED} ok?",
    "password is now set to: abc123 today": f"password is now set to: {REDACTED} today",
    "I changed my password to Kx7#mQ2vLp!": f"I changed my password to {REDACTED}",
    "set the pwd to 'correct horse'": f"set the pwd to '{REDACTED}'",
    'my passphrase is "open sesame now"': f'my passphrase is "{REDACTED}"',
    # Chinese
    "我的密码是Wq5$hN8rTz，别告诉别人": f"我的密码是{REDACTED}，别告诉别人",
    "密码改成了Ys3!pB6kDm": f"密码改成了{REDACTED}",
    "登录密码已经改为 Zx9!kLm2。": f"登录密码已经改为 {REDACTED}。",
    "口令就是p4ss&w0rd": f"口令就是{REDACTED}",
    "把密码设置为Qa1@ws2": f"把密码设置为{REDACTED}",
}
BOUNDARIES = {
    "passwd=Tr0ub4dor&3": f"passwd={REDACTED}",
    "pwd: Tr0ub4dor;3, next": f"pwd: {REDACTED}, next",
    "password=a,b,c end": f"password={REDACTED} end",
    "Server=db;Password=p@ss;w0rd&x;Database=app": f"Server=db;Password={REDACTED};Database=app",
    "https://x.io/login?password=hunter2&next=/home": f"https://x.io/login?password={REDACTED}&next=/home",
    "?token=abc987xyz&x=1": "?token=[REDACTED:secret]&x=1",
    "password=abc&token=xyz": f"password={REDACTED}&token=[REDACTED:secret]",
    '{"note": "passwd=Tr0ub4dor&3"}': f'{{"note": "passwd={REDACTED}"}}',
}
ORDINARY = (
    "The password is required.",
    "Your password is too short; try again.",
    "Reset your password to continue.",
    "the password for the vpn is in the vault",
    "Passwords are stored hashed.",
    "Change the password to something stronger.",
    "密码是什么？",
    "密码已经改好了。",
    "step_id=step4&entity=temp_alert",
)


@pytest.fixture(scope="module")
def gateway() -> Sanitizer:
    return Sanitizer()


@pytest.mark.parametrize("text", sorted(PROSE))
def test_a_password_said_in_prose_is_redacted(gateway: Sanitizer, text: str) -> None:
    result = gateway.sanitize_text(text, location="t")
    assert result.text == PROSE[text]
    assert {r.kind for r in result.redactions} == {Kind.PASSWORD}
    assert gateway.text(result.text, location="t") == result.text  # idempotent


@pytest.mark.parametrize("text", sorted(BOUNDARIES))
def test_the_whole_value_is_redacted_at_its_boundary(gateway: Sanitizer, text: str) -> None:
    assert gateway.text(text, location="t") == BOUNDARIES[text]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_about_passwords_stay(gateway: Sanitizer, text: str) -> None:
    assert gateway.text(text, location="t") == text


def test_identifier_findings_follow_the_policy() -> None:
    strict = Sanitizer()
    assert strict.identifier_finding("dev-42") is None
    assert strict.identifier_finding("li.wei@example.com") is Kind.EMAIL
    assert strict.identifier_finding("13812345678", field="user_id") is Kind.PHONE
    assert strict.identifier_finding("AKIAIOSFODNN7EXAMPLQ") is Kind.AWS_ACCESS_KEY
    lenient = Sanitizer(FieldPolicy.from_config(fields={"user_id": {"phone": "allow"}}))
    assert lenient.identifier_finding("13812345678", field="user_id") is None
    assert lenient.identifier_finding("13812345678", field="session_id") is Kind.PHONE
    # Masking is no way to keep an id: it would change.
    masking = Sanitizer(FieldPolicy.from_config({"email": "mask"}))
    assert masking.identifier_finding("li.wei@example.com") is Kind.EMAIL
