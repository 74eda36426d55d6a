"""The window index holds a sample of each captured text (one window in ``STEP`` positions) and every
window of what is exported is probed: a run of ``MIN_RUN`` letters and digits of a text is still found
at every offset of the text and of the value around it, in any encoding the skeleton reads through; what
a call did not send is no visible text (a thought holding it is removed)."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_otel.core._scrub import forget_all, marker, scrub_value
from loom_otel.core._scrub._registry import registry
from loom_otel.core._scrub._windows import MIN_RUN, STEP, WINDOW, WindowIndex, skeleton

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_GAPS = " .,;:-\n\"'()"


def _text(letters: str, gaps: list[str]) -> str:
    """``letters`` with the punctuation and white space of ``gaps`` put between them."""
    return "".join(letter + (gaps[i % len(gaps)] if gaps else "") for i, letter in enumerate(letters))


def test_a_text_is_indexed_by_a_sample_of_its_windows() -> None:
    index = WindowIndex(1 << 16)
    rng = random.Random(49)
    form = skeleton(" ".join(rng.choice(("rain", "Lyon", "noon", "sun")) + str(n) for n in range(400)).encode())
    index.add([form], (), "[gone]")
    indexed = len(index._young.windows)
    assert indexed <= len(form) // STEP + 1  # one window in STEP positions at most (was one in 8)
    assert indexed < len(form) // 8


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secret=st.text(_ALNUM, min_size=MIN_RUN, max_size=3 * MIN_RUN + STEP),
    gaps=st.lists(st.sampled_from(_GAPS), max_size=4),
    before=st.text(_ALNUM + _GAPS, max_size=2 * WINDOW),
    pad=st.integers(0, STEP + WINDOW),
)
def test_the_shortest_covered_run_is_found_at_every_offset(secret: str, gaps: list[str], before: str, pad: int) -> None:
    """Every run of ``MIN_RUN`` letters and digits, at every offset of the text (with punctuation between
    its letters), after any text and padding, plain and in a JSON value, is replaced."""
    forget_all()
    text = _text(secret, gaps)
    registry.add_text(text, "[gone]", (None, None, len(text)), 0)
    for start in range(len(secret) - MIN_RUN + 1):
        piece = _text(secret[start : start + MIN_RUN], gaps)
        values = [f"{before}{'~' * pad} {piece} tail"]
        if not {"\n", '"'} & set(gaps):  # JSON escapes between every two letters: no run is left whole
            values.append(json.dumps({"note": f"{'~' * pad}{piece}"}))
        for value in values:
            scrubbed = scrub_value(value)
            assert "[gone]" in scrubbed and secret[start : start + MIN_RUN] not in skeleton(scrubbed.encode()).decode()
    forget_all()


def test_a_run_beside_a_marker_is_still_found() -> None:
    """loom-otel's own markers are left out of the search: the secret next to one is not."""
    secret = "Zq7" * 40
    ours = marker("0" * 32 + "/" + "1" * 64, "2" * 64, 120, "text")
    registry.add_text(secret, "[gone]", (None, None, 120), 0)
    for value in (f"{ours}{secret[:MIN_RUN]}", f"{secret[5 : 5 + MIN_RUN]}{ours}", f"a {ours} {secret[7:50]} {ours}"):
        scrubbed = scrub_value(value)
        assert (
            ours in scrubbed and "[gone]" in scrubbed and skeleton(secret[:MIN_RUN].encode()) not in scrubbed.encode()
        )


def test_what_a_call_did_not_send_is_not_visible_text() -> None:
    """A request's field left unset (or ``None``) was not sent: its name is no visible text, so a thought
    holding the same letters is still removed; a field set is visible, names and values."""
    from pydantic import BaseModel

    from loom_otel.core._scrub._visible import visible_skeleton

    class Config(BaseModel):
        temperature_override_for_the_planner: float | None = None
        candidate_count_of_the_planner_pass: int | None = None
        stop_sequence_of_the_planner: str = "never"
        system_instruction: str | None = None

    config = Config(system_instruction="Plan the trip to Lyon carefully")
    seen = visible_skeleton({"config": config, "unused_tool_choice_of_the_planner": None})
    assert b"systeminstructionPlanthetriptoLyoncarefully" in seen
    for unsent in (b"temperatureoverride", b"candidatecount", b"stopsequence", b"never", b"unusedtoolchoice"):
        assert unsent not in seen
