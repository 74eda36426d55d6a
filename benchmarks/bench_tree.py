"""What the origin's Merkle tree costs a capture: the writer's leaf (the record hash decoded, hashed
as an RFC 6962 leaf, merged into the compact range) and, shared by the records it covers, each
checkpoint's root and signed note; beside it, a whole journal append for scale.

    .venv/bin/python benchmarks/bench_tree.py [--records 200000] [--every 1000] [--rounds 5]

Prints, per capture, the best of ``--rounds`` runs: the leaf, the checkpoint's share (root + note +
Ed25519 signature, divided by ``--every``, the records a checkpoint covers by default), their sum
(target: under 5 us), and a journal append (``durability="os"``) for comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
import warnings
from pathlib import Path

from loom_otel.core._evidence._journal._checkpoint import Signer, generate_key
from loom_otel.core._evidence._journal._merkle import CompactRange, leaf_hash
from loom_otel.core._evidence._journal._note import tree_attributes
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.core.exceptions import LoomOtelWarning

TARGET_US = 5.0
ATTRIBUTES = {
    "loom.execution.id": "0af7651916cd43dd8448eb211c80319c",
    "loom.step.id": "b7ad6b7169203331",
    "loom.reasoning.part.digest": ["2" * 64],
    "loom.reasoning.part.size": [8192],
}


def leaves(hashes: list[str]) -> float:
    """Seconds to add every record hash to a compact range, as the writer does."""
    tree = CompactRange()
    started = time.perf_counter()
    for digest in hashes:
        tree.append(leaf_hash(bytes.fromhex(digest)))
    return time.perf_counter() - started


def checkpoints(signer: Signer, count: int) -> float:
    """Seconds for ``count`` checkpoints' tree attributes: the root of a range of 2^20 - 1 records (20
    peaks to fold, the most a million records need), the note and its signature."""
    size = (1 << 20) - 1
    tree = CompactRange(size, [hashlib.sha256(bytes([i])).digest() for i in range(size.bit_count())])
    started = time.perf_counter()
    for _ in range(count):
        tree_attributes("host-1234-0123456789ab", tree.size, tree.root(), signer.key)
    return time.perf_counter() - started


def appends(directory: Path, records: int) -> float:
    warnings.simplefilter("ignore", LoomOtelWarning)  # unsigned on purpose: the signature is timed above
    journal = Journal(directory, durability="os", checkpoint_key=None, checkpoint_every=10**9, checkpoint_interval=0)
    started = time.perf_counter()
    for _ in range(records):
        journal.append("capture", ATTRIBUTES)
    elapsed = time.perf_counter() - started
    journal.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--every", type=int, default=1000, help="records a checkpoint covers")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    hashes = [hashlib.sha256(i.to_bytes(8, "big")).hexdigest() for i in range(args.records)]
    with tempfile.TemporaryDirectory(prefix="loom-bench-tree-") as workdir:
        generate_key(Path(workdir) / "key.pem")
        signer = Signer.from_file(Path(workdir) / "key.pem")
        signs = max(1, args.records // args.every)
        leaf = min(leaves(hashes) for _ in range(args.rounds)) / args.records * 1e6
        share = min(checkpoints(signer, signs) for _ in range(args.rounds)) / signs / args.every * 1e6
        append = min(appends(Path(workdir) / f"j{r}", args.records) for r in range(args.rounds)) / args.records * 1e6
    total = leaf + share
    print(f"records {args.records}, a checkpoint every {args.every}, best of {args.rounds}")
    print(f"leaf (hex decode, leaf hash, compact range)  {leaf:6.2f} us/capture")
    print(f"checkpoint root + note + signature, shared   {share:6.2f} us/capture")
    print(f"tree per capture                             {total:6.2f} us (target < {TARGET_US:.0f} us)")
    print(f"journal append (durability os), for scale    {append:6.2f} us/capture")


if __name__ == "__main__":
    main()
