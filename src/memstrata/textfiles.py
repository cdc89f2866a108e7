"""How a document file's bytes become text: one rule for the engine's file ingest and
the CLI's (which sends files to a service without importing the knowledge package)."""

from __future__ import annotations


def decode_document(data: bytes) -> str:
    """UTF-8 (BOM tolerated) or BOM-marked UTF-16 text; raises ``ValueError`` otherwise."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-16 text (invalid data at offset {exc.start})") from exc
    if b"\x00" in data:
        raise ValueError("binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (invalid byte at offset {exc.start})") from exc
