"""The origin's Merkle tree against the published RFC 6962 test vectors (the leaves, roots, inclusion and
consistency proofs of the Certificate Transparency reference tests), every proof of every size up to 40
checked both ways, and proofs that are wrong in any one way refused."""

from __future__ import annotations

import pytest

from loom_otel.core._evidence._journal._merkle import (
    EMPTY_ROOT,
    CompactRange,
    MerkleTree,
    ProofError,
    leaf_hash,
    root_from_inclusion,
    verify_consistency,
    verify_inclusion,
)

LEAVES = [
    bytes.fromhex(h)
    for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f")
]
ROOTS = [  # by tree size, 1..8
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION = [  # (leaf index, tree size, proof)
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
CONSISTENCY = [  # (old size, new size, proof)
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]
HASHES = [leaf_hash(leaf) for leaf in LEAVES]


def _hex(proof: list[bytes]) -> list[str]:
    return [p.hex() for p in proof]


def test_roots_of_the_published_vectors_from_the_compact_range_and_the_tree():
    compact = CompactRange()
    assert compact.root() == EMPTY_ROOT == MerkleTree([]).root()
    tree = MerkleTree(HASHES)
    for size, expected in enumerate(ROOTS, start=1):
        compact.append(HASHES[size - 1])
        assert len(compact.peaks) == size.bit_count()  # O(log n) state
        assert compact.root().hex() == expected == tree.root(size).hex()


@pytest.mark.parametrize(("index", "size", "proof"), INCLUSION)
def test_inclusion_proofs_of_the_published_vectors(index, size, proof):
    assert _hex(MerkleTree(HASHES).inclusion_proof(index, size)) == proof
    verify_inclusion(index, size, HASHES[index], [bytes.fromhex(p) for p in proof], bytes.fromhex(ROOTS[size - 1]))


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY)
def test_consistency_proofs_of_the_published_vectors(old, new, proof):
    assert _hex(MerkleTree(HASHES).consistency_proof(old, new)) == proof
    verify_consistency(
        old, new, bytes.fromhex(ROOTS[old - 1]), bytes.fromhex(ROOTS[new - 1]), [bytes.fromhex(p) for p in proof]
    )


def test_every_proof_up_to_forty_leaves_verifies():
    hashes = [leaf_hash(i.to_bytes(4, "big")) for i in range(40)]
    tree = MerkleTree(hashes)
    compact = CompactRange()
    for size in range(1, 41):
        compact.append(hashes[size - 1])
        root = tree.root(size)
        assert compact.root() == root
        for index in range(size):
            proof = tree.inclusion_proof(index, size)
            assert len(proof) <= (size - 1).bit_length()
            verify_inclusion(index, size, hashes[index], proof, root)
        for old in range(size + 1):
            verify_consistency(old, size, tree.root(old), root, tree.consistency_proof(old, size))


def _corruptions(proof: list[bytes]) -> list[list[bytes]]:
    wrong = [proof[:-1], [*proof, proof[-1]], [bytes(32), *proof], [*proof, bytes(32)], proof[1:]]
    for i in range(len(proof)):
        flipped = list(proof)
        flipped[i] = bytes([proof[i][0] ^ 8]) + proof[i][1:]
        wrong.append(flipped)
    return [w for w in wrong if w != proof]


def test_a_wrong_inclusion_proof_is_refused():
    tree = MerkleTree(HASHES)
    root = tree.root(8)
    proof = tree.inclusion_proof(5, 8)
    for wrong in _corruptions(proof):
        with pytest.raises(ProofError):
            verify_inclusion(5, 8, HASHES[5], wrong, root)
    for index, size, leaf, at_root in [
        (4, 8, HASHES[5], root),
        (5, 16, HASHES[5], root),
        (5, 4, HASHES[5], root),
        (5, 8, HASHES[4], root),
        (5, 8, HASHES[5], tree.root(7)),
        (8, 8, HASHES[5], root),
    ]:
        with pytest.raises(ProofError):
            verify_inclusion(index, size, leaf, proof, at_root)
    assert root_from_inclusion(0, 1, HASHES[0], []) == HASHES[0]


def test_a_wrong_consistency_proof_is_refused():
    tree = MerkleTree(HASHES)
    old, new = tree.root(6), tree.root(8)
    proof = tree.consistency_proof(6, 8)
    for wrong in _corruptions(proof):
        with pytest.raises(ProofError):
            verify_consistency(6, 8, old, new, wrong)
    for args in [
        (5, 8, old, new),
        (6, 16, old, new),
        (6, 4, old, new),
        (7, 8, old, new),
        (6, 8, new, old),
        (6, 8, tree.root(5), new),
        (8, 6, old, new),
    ]:
        with pytest.raises(ProofError):
            verify_consistency(*args, proof)
    with pytest.raises(ProofError):
        verify_consistency(3, 3, tree.root(3), tree.root(4), [])
    with pytest.raises(ProofError):
        verify_consistency(1, 2, tree.root(1), tree.root(2), [])


def test_a_compact_range_restored_from_its_peaks_goes_on():
    whole = CompactRange()
    for leaf in HASHES[:5]:
        whole.append(leaf)
    restored = CompactRange(whole.size, whole.peaks)
    for leaf in HASHES[5:]:
        restored.append(leaf)
    assert restored.root().hex() == ROOTS[-1]
    with pytest.raises(ValueError, match="holds"):
        CompactRange(5, whole.peaks[:1])
