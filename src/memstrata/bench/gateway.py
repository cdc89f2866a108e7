"""``memstrata bench gateway``: sanitizer cost per call, and linear scaling on hostile input.

The baseline is a plain ``str.replace`` pass over the same text (the cheapest
possible "sanitizer"), measured in the same run. The sanitizer remembers texts it found
clean; every timed call here scans (the memory is emptied first), and the cost of a
text seen before is reported apart (``sanitize_seen_us``).
"""

from __future__ import annotations

import time
from typing import Any

from memstrata.gateway import Sanitizer

_BASE = (
    "Agent 在执行多步任务时如何持续、稳定、可追溯地管理它的记忆与上下文。 Order ORD-2024-000123 "
    "shipped 2025-04-01T08:22:00Z for ¥1,299.00; see v2.13.0 and wm:{sess_1}:api:abc. "
    "The quick brown fox jumps over the lazy dog. "
)
PLAIN_2KB = (_BASE * 20)[:2048]
DIRTY_2KB = (
    PLAIN_2KB[:1000]
    + " mail alice@example.com, call 13812345678, key sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd "
    + PLAIN_2KB[1000:]
)[:2048]
# Shapes that make naive regexes backtrack; each is scaled x1 and x4 to show linearity.
HOSTILE = {
    "repeated_field": "password=",
    "repeated_key_prefix": "sk-",
    "unterminated_private_keys": "-----BEGIN PRIVATE KEY-----",
    "glued_emails": "x=a@b.co&",
    "digits": "1 ",
    "cn_labels": "密码",
    "markdown_tables": "| password | x |\n|---|---|\n| Qk5rav99 | y |\n",
    "cookie_headers": "Cookie: sid=abcdef123456; ",
    "cn_open_quotes": "密码：「",
}


def _best_us(fn: Any, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return round(best * 1e6, 2)


def run_gateway_bench(calls: int = 300) -> dict[str, Any]:
    """Per-call microseconds for 2 KB texts and the x4/x1 time ratio on hostile inputs."""
    sanitizer = Sanitizer()

    def scan(text: str) -> None:
        sanitizer.clear_cache()  # a scan, not a lookup of a text found clean before
        sanitizer.text(text, location="bench")

    texts = {"plain_2kb": PLAIN_2KB, "with_secrets_2kb": DIRTY_2KB}
    per_call = {
        name: {
            "sanitize_us": _best_us(lambda t=text: scan(t), calls),
            "sanitize_seen_us": _best_us(lambda t=text: sanitizer.text(t, location="bench"), calls),
            "baseline_replace_us": _best_us(lambda t=text: t.replace("sk-", "[x]"), calls),
        }
        for name, text in texts.items()
    }
    scaling = {}
    for name, unit in HOSTILE.items():
        small, large = unit * 1000, unit * 4000
        t_small = _best_us(lambda s=small: scan(s), 3)
        t_large = _best_us(lambda s=large: scan(s), 3)
        scaling[name] = {
            "us_x1": t_small,
            "us_x4": t_large,
            "ratio_x4_over_x1": round(t_large / t_small, 2),
        }
    return {
        "per_call": per_call,
        "hostile_scaling": scaling,
        "note": "linear input => ratio near 4",
    }
