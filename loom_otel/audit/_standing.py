"""How far each record is proven: its standing (DESIGN "Who may read"), the one place it is decided.

- ``signed``: its origin's chain runs intact from seq 1 to a checkpoint signed by a key the reader
  trusts, and that checkpoint covers the record;
- ``chained``: hash-linked, in that same intact run, past the last such checkpoint;
- ``unproven``: anything else: an origin with no checkpoint signed by a trusted key (an unknown origin,
  or any origin when no key is trusted: an intact chain anyone could have written proves nothing), a
  record after a gap, a modified record, a broken link or conflicting copies of one seq, a copy whose
  hash does not recompute from its content, a malformed line.

The chains are walked by ``verify`` (``OriginReport.intact_through`` and ``signed_through``), so a
standing means what ``loom-otel verify --key`` proves. Trusted keys: those given (``--trust KEYFILE``),
and the public half of ``LOOM_OTEL_CHECKPOINT_KEY`` when it is set (the deployment's own signing key).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from loom_otel.audit._captures import ReasoningSource, SpanLike
from loom_otel.audit._verify import verify
from loom_otel.core import environment_variables as env
from loom_otel.core.journal import all_segments, load_public_key, record_from_event
from loom_otel.core.runtime import BoundedMemo

__all__ = ["Standing", "Standings", "trusted_keys"]

_MEMO_LIMIT: Final = 16


class Standing(enum.StrEnum):
    """How far a record is proven."""

    SIGNED = "signed"
    CHAINED = "chained"
    UNPROVEN = "unproven"

    @property
    def proven(self) -> bool:
        """``signed`` or ``chained``: a tombstone that is turns ``missing`` into ``erased``."""
        return self is not Standing.UNPROVEN

    def __str__(self) -> str:
        return self.value


def trusted_keys(paths: Iterable[str | os.PathLike[str]] = (), *, environment: bool = True) -> frozenset[str]:
    """The hex public keys of ``paths`` (PEM public or private key files, ``loom-otel keygen``) and, with
    ``environment``, of ``LOOM_OTEL_CHECKPOINT_KEY`` when it names a key that loads. ``ValueError`` or
    ``OSError`` for a given file that is not an Ed25519 key."""
    keys = {load_public_key(p) for p in paths}
    own = os.environ.get(env.LOOM_OTEL_CHECKPOINT_KEY) if environment else None
    if own:
        with contextlib.suppress(OSError, ValueError):  # the writer warns about an unusable key
            keys.add(load_public_key(own))
    return frozenset(k.lower() for k in keys)


Chains = dict[str, tuple[int, int]]
"""``origin -> (intact_through, signed_through)``."""


def _fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Each file of the chains (a journal's segments, or the archive) with its size and time."""
    if not path.is_dir():
        files = [path]
    else:
        files = [p for _, p in all_segments(path)] or sorted(p for p in path.rglob("*") if p.is_file())
    found = []
    for file in files:
        try:
            stat = file.stat()
        except OSError:
            continue
        found.append((str(file), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def _walk(path: Path, trusted: frozenset[str]) -> Chains:
    report = verify(path, public_keys=trusted)
    return {o.origin: (o.intact_through, o.signed_through) for o in report.origins}


_memo: BoundedMemo[tuple[str, frozenset[str], tuple[tuple[str, int, int], ...]], Chains] = BoundedMemo(_MEMO_LIMIT)


def _path_chains(path: Path, trusted: frozenset[str]) -> Chains:
    """The chains of a journal or archive, walked again only when its files changed (the viewer asks on
    every page)."""
    return _memo.get((str(path.absolute()), trusted, _fingerprint(path)), lambda key: _walk(path, key[1]))


def _span_chains(spans: Iterable[SpanLike], trusted: frozenset[str]) -> Chains:
    """The chains the span events carry, walked as an archive of their records."""
    with tempfile.TemporaryDirectory(prefix="loom-standing-") as tmp:
        path = Path(tmp) / "records.json"
        with path.open("w", encoding="utf-8") as fh:
            for span in spans:
                for event in span.events:
                    record = record_from_event(event.name, dict(event.attributes or {}), int(event.timestamp or 0))
                    if record is not None:
                        fh.write(json.dumps(record) + "\n")
        return _walk(path, trusted) if path.stat().st_size else {}


class Standings:
    """The standing of each record of one source, its chains walked once, on the first question."""

    __slots__ = ("_chains", "_source", "trusted")

    def __init__(self, source: ReasoningSource | None, trusted: frozenset[str]) -> None:
        self._source = source
        self.trusted = trusted
        self._chains: Chains | None = None

    def _walked(self) -> Chains:
        if self._chains is None:
            source = self._source
            if not self.trusted or source is None:
                self._chains = {}  # no key trusted: nothing can be signed, nor chained to a signature
            elif isinstance(source, (str, os.PathLike)):
                path = Path(source)
                self._chains = _path_chains(path, self.trusted) if path.exists() else {}
            else:
                self._chains = _span_chains(source, self.trusted)
        return self._chains

    def of(self, origin: str, seq: int, record_hash: str) -> Standing:
        """The standing of the record at ``seq`` of ``origin`` read with ``record_hash`` (its hash when it
        recomputes from the record as read; ``""``: it does not, so it is ``unproven``)."""
        if not record_hash or not origin or seq < 1:
            return Standing.UNPROVEN
        intact, signed = self._walked().get(origin, (0, 0))
        if seq <= signed:
            return Standing.SIGNED
        if signed and seq <= intact:
            return Standing.CHAINED
        return Standing.UNPROVEN
