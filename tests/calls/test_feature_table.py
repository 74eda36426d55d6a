"""The feature table, measured: the official, OpenInference and OpenLLMetry Anthropic instrumentations
and loom-otel, each alone, on the same calls. loom-otel records every feature (time to first chunk
once the stream proxies call ``first_chunk``)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.calls.features import FEATURES, NAMES, measure, table


def test_loom_otel_records_every_feature(tmp_path):
    found = measure("loom-otel", tmp_path)
    missing = [f for f in FEATURES if not found[f] and f != "time to first chunk (stream)"]
    assert missing == []


@pytest.mark.peers
@pytest.mark.slow
def test_the_readmes_feature_table_is_the_measured_one(tmp_path, capsys):
    text = table(tmp_path)  # measured, not printed: tests write nothing into pytest's progress
    assert capsys.readouterr() == ("", "")
    measured = _rows(text.splitlines())
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(readme) if line.startswith("| feature | official"))
    end = next(i for i in range(start, len(readme)) if not readme[i].startswith("|"))
    documented = _rows(readme[start:end])
    for row, features in README_ROWS.items():
        if "time to first chunk (stream)" in features:
            continue  # the README says when loom-otel records it
        cells = [all(measured[f][i] == "yes" for f in features) for i in range(len(NAMES))]
        assert documented[row] == ["yes" if c else "no" for c in cells], (row, measured)


README_ROWS: Final = {
    **{feature: (feature,) for feature in FEATURES[:8]},
    "gen_ai.client.token.usage / operation.duration": (
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
    ),
    "time to first chunk (stream)": ("time to first chunk (stream)",),
    "input/output messages": ("input/output messages (SPAN_ONLY)",),
    "no reasoning text or signature exported": ("no reasoning text or signature exported",),
}
"""The README's rows, each the measured features it stands for (every one must be recorded)."""


def _rows(lines: list[str]) -> dict[str, list[str]]:
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells[1:]}
