"""The Merkle tree of an origin's records (RFC 6962 / RFC 9162 hashing, as Certificate Transparency and
the C2SP transparency logs use it), beside the linear chain.

The chain (``prev``, ``hash``) proves one origin's records are whole and in order, but proving that ONE
record is in the log means handing over every record between it and a checkpoint, other executions' and
tenants' included. The tree proves it with ``log2(n)`` hashes: a record's leaf is
``SHA-256(0x00 || record hash bytes)``, an inner node ``SHA-256(0x01 || left || right)``, and a tree of
``n`` leaves splits at the largest power of two below ``n``.

- ``CompactRange``: what a writer keeps, O(log n) hashes (the roots of the perfect subtrees, left to
  right); ``append`` a leaf, ``root()`` the tree's root at its size.
- ``MerkleTree``: every level of a whole origin, to prove (``inclusion_proof``, ``consistency_proof``)
  at any size up to its own; built once per origin by the exporter of a bundle.
- ``root_from_inclusion`` / ``verify_inclusion`` and ``verify_consistency``: what a verifier runs, with
  nothing but the proof, the sizes and the signed roots (RFC 9162 2.1.3.2 and 2.1.4.2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

__all__ = [
    "EMPTY_ROOT",
    "CompactRange",
    "MerkleTree",
    "ProofError",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion",
    "verify_consistency",
    "verify_inclusion",
]

_LEAF: Final = b"\x00"
_NODE: Final = b"\x01"
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()
"""The root of a tree with no leaves."""


class ProofError(ValueError):
    """A proof that does not lead to the root it claims (or is malformed for its sizes)."""


def leaf_hash(data: bytes) -> bytes:
    """``SHA-256(0x00 || data)``: a leaf (``data`` is a record's chain hash, 32 bytes)."""
    return hashlib.sha256(_LEAF + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 || left || right)``: an inner node."""
    return hashlib.sha256(_NODE + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (``n`` >= 2): where a tree of ``n`` leaves splits."""
    return 1 << ((n - 1).bit_length() - 1)


class CompactRange:
    """An append-only tree's state in O(log n) hashes: the roots of its perfect subtrees, left to right
    (one per bit set in ``size``)."""

    __slots__ = ("_peaks", "size")

    def __init__(self, size: int = 0, peaks: Sequence[bytes] = ()) -> None:
        if len(peaks) != size.bit_count():
            raise ValueError(f"a compact range of size {size} holds {size.bit_count()} hashes, not {len(peaks)}")
        self.size = size
        self._peaks = list(peaks)

    @property
    def peaks(self) -> tuple[bytes, ...]:
        return tuple(self._peaks)

    def append(self, leaf: bytes) -> None:
        """Add one leaf (a leaf hash): merges the perfect subtrees it completes."""
        merged = leaf
        size = self.size
        while size & 1:
            merged = node_hash(self._peaks.pop(), merged)
            size >>= 1
        self._peaks.append(merged)
        self.size += 1

    def root(self) -> bytes:
        """The tree's root at ``size`` (``EMPTY_ROOT`` for none)."""
        if not self._peaks:
            return EMPTY_ROOT
        root = self._peaks[-1]
        for peak in reversed(self._peaks[:-1]):
            root = node_hash(peak, root)
        return root


class MerkleTree:
    """Every level of a tree over ``leaves`` (leaf hashes), to answer proofs at any size up to its own."""

    __slots__ = ("_levels",)

    def __init__(self, leaves: Sequence[bytes]) -> None:
        levels = [list(leaves)]
        while len(levels[-1]) > 1:
            below = levels[-1]
            levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
        self._levels = levels

    @property
    def size(self) -> int:
        return len(self._levels[0])

    def _hash(self, start: int, end: int) -> bytes:
        """The root of the subtree over leaves ``[start, end)``."""
        n = end - start
        if n == 0:
            return EMPTY_ROOT
        height = n.bit_length() - 1
        if n == 1 << height and start % n == 0:  # a perfect, aligned subtree: kept
            return self._levels[height][start >> height]
        k = _split(n)
        return node_hash(self._hash(start, start + k), self._hash(start + k, end))

    def root(self, size: int | None = None) -> bytes:
        """The root at ``size`` leaves (default: all)."""
        return self._hash(0, self._checked(size))

    def _checked(self, size: int | None) -> int:
        if size is None:
            return self.size
        if not 0 <= size <= self.size:
            raise ValueError(f"size {size} is outside the tree's 0..{self.size}")
        return size

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of ``size`` leaves (RFC 6962 2.1.1), leaf first."""
        n = self._checked(size)
        if not 0 <= index < n:
            raise ValueError(f"leaf {index} is not in a tree of {n}")
        path: list[bytes] = []
        start, end = 0, n
        while end - start > 1:
            k = _split(end - start)
            if index < start + k:
                path.append(self._hash(start + k, end))
                end = start + k
            else:
                path.append(self._hash(start, start + k))
                start += k
        path.reverse()
        return path

    def consistency_proof(self, old: int, new: int | None = None) -> list[bytes]:
        """The proof that the tree of ``old`` leaves is a prefix of the one of ``new`` (RFC 6962 2.1.2)."""
        n = self._checked(new)
        if not 0 <= old <= n:
            raise ValueError(f"size {old} is not within 0..{n}")
        if old in (0, n):
            return []
        proof: list[bytes] = []
        start, end, whole = 0, n, True
        m = old
        while m != end - start:
            k = _split(end - start)
            if m <= k:
                proof.append(self._hash(start + k, end))
                end = start + k
            else:
                proof.append(self._hash(start, start + k))
                start += k
                m -= k
                whole = False
        if not whole:
            proof.append(self._hash(start, end))
        proof.reverse()
        return proof


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` leads to from ``leaf`` at ``index`` in a tree of ``size`` (RFC 9162
    2.1.3.2); ``ProofError`` when the proof cannot be one for that position."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size}")
    fn, sn = index, size - 1
    root = leaf
    for sibling in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is high")
        if fn & 1 or fn == sn:
            root = node_hash(sibling, root)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            root = node_hash(root, sibling)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is high")
    return root


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """``ProofError`` unless ``proof`` leads from ``leaf`` (at ``index`` of ``size``) to ``root``."""
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError("the inclusion proof does not lead to the signed root")


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """``ProofError`` unless ``proof`` shows that the tree of ``old`` leaves (root ``old_root``) is a
    prefix of the one of ``new`` leaves (root ``new_root``) (RFC 9162 2.1.4.2)."""
    if old > new:
        raise ProofError(f"a log of {new} records cannot extend one of {old}")
    if old == new:
        if proof or old_root != new_root:
            raise ProofError("two checkpoints of one size must have one root and no proof")
        return
    if old == 0:
        if proof:
            raise ProofError("the empty log is a prefix of every log: its proof is empty")
        return
    if not proof:
        raise ProofError("the consistency proof is empty")
    path = list(proof)
    if old & (old - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    first = second = path[0]
    for node in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the tree is high")
        if fn & 1 or fn == sn:
            first = node_hash(node, first)
            second = node_hash(node, second)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            second = node_hash(second, node)
        fn >>= 1
        sn >>= 1
    if sn != 0 or first != old_root or second != new_root:
        raise ProofError("the consistency proof does not lead to both signed roots")
