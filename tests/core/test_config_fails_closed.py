"""DESIGN "Environment": an invalid ``LOOM_OTEL_*`` value is a ``ReasoningConfigError`` at ``instrument()``
naming the variable, the value and what is allowed; never a silent fallback, nothing created on disk."""

from __future__ import annotations

import os

import pytest

from loom_otel.core import ReasoningConfigError
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented

BOOLEANS = (
    "LOOM_OTEL_REASONING",
    "LOOM_OTEL_REASONING_CAPTURE",
    "LOOM_OTEL_REASONING_LIVE",
    "LOOM_OTEL_REASONING_LIVE_TEXT",
    "LOOM_OTEL_STORE_FSYNC",
    "LOOM_OTEL_REQUIRE_CONTINUATION",
)


def refused(environ: dict[str, str], *expected: str) -> str:
    """Instrument a real instrumentor under ``environ``; the error's message (which must name each of
    ``expected``); the working directory (the test's tmp_path) stays empty."""
    before = set(os.listdir("."))
    with pytest.raises(ReasoningConfigError) as info:
        with instrumented(AnthropicInstrumentor(), environ=environ):
            pass
    message = str(info.value)
    for part in expected:
        assert part in message, (part, message)
    assert set(os.listdir(".")) == before  # nothing made in the working directory
    assert not AnthropicInstrumentor().is_instrumented_by_opentelemetry
    return message


@pytest.mark.parametrize("name", BOOLEANS)
@pytest.mark.parametrize("value", ["banana", "2", "enabled"])
def test_a_boolean_that_is_not_one_is_an_error(name, value):
    refused({name: value, "LOOM_OTEL_REASONING_STORE": "memory:"}, name, repr(value), "true or false")


@pytest.mark.parametrize("value", ["TRUE", " off ", "1", "No"])
def test_booleans_in_any_case_and_spacing_are_accepted(value):
    with instrumented(
        AnthropicInstrumentor(), environ={"LOOM_OTEL_REASONING_LIVE": value, "LOOM_OTEL_REASONING_STORE": "memory:"}
    ):
        pass


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("LOOM_OTEL_REASONING_TRANSCRIPT", "redacted", "keep, redact"),  # a typo must not give keep mode
        ("LOOM_OTEL_REASONING_TRANSCRIPT", "hide", "keep, redact"),
        ("LOOM_OTEL_JOURNAL_DURABILITY", "never", "always, batch, os"),
        ("LOOM_OTEL_DIGEST", "md5", "sha256, hmac-sha256"),
    ],
)
def test_a_choice_outside_its_values_is_an_error_listing_them(name, value, allowed):
    refused({name: value, "LOOM_OTEL_REASONING_STORE": "memory:"}, name, repr(value), allowed)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("file://", "no directory"),
        ("not a url", "relative"),
        ("banana", "relative"),
        ("./store", "relative"),
        ("file://relative/dir", "no host"),
        ("%00", "relative"),
        ("file:///tmp/a%00b", "NUL"),
        ("banana://x", "unknown scheme 'banana'"),
    ],
)
def test_a_store_url_that_cannot_work_is_an_error_naming_it(value, why):
    message = refused({"LOOM_OTEL_REASONING_STORE": value}, "LOOM_OTEL_REASONING_STORE", repr(value), why)
    assert "file:///absolute/dir" in message  # what is allowed


def test_an_unknown_scheme_lists_the_known_ones_and_fsspecs():
    pytest.importorskip("fsspec")
    message = refused({"LOOM_OTEL_REASONING_STORE": "banana://x"}, "file, memory", "fsspec knows")
    assert "s3" in message and "gcs" in message


def test_an_fsspec_location_that_cannot_be_opened_is_an_error_not_a_raw_socket_error():
    pytest.importorskip("fsspec")
    value = "ftp://no-such-host.invalid/dir"
    message = refused({"LOOM_OTEL_REASONING_STORE": value}, "LOOM_OTEL_REASONING_STORE", repr(value))
    assert "gaierror" in message or "Error" in message


@pytest.mark.parametrize("value", ["banana", "journal/here", "./j"])
def test_a_relative_journal_directory_is_an_error(value):
    refused(
        {"LOOM_OTEL_AUDIT_JOURNAL": value, "LOOM_OTEL_REASONING_STORE": "memory:"},
        "LOOM_OTEL_AUDIT_JOURNAL",
        repr(value),
        "an absolute path",
    )


def test_a_relative_journal_directory_is_an_error_even_without_a_store():
    refused({"LOOM_OTEL_AUDIT_JOURNAL": "banana"}, "LOOM_OTEL_AUDIT_JOURNAL", "'banana'", "absolute")


def test_an_absolute_store_path_and_journal_are_accepted(tmp_path):
    environ = {"LOOM_OTEL_REASONING_STORE": str(tmp_path / "s"), "LOOM_OTEL_AUDIT_JOURNAL": str(tmp_path / "j")}
    with instrumented(AnthropicInstrumentor(), environ=environ):
        pass


def test_a_missing_checkpoint_key_is_an_error_at_instrument_naming_the_path(tmp_path):
    key = tmp_path / "no-such.pem"
    refused(
        {"LOOM_OTEL_CHECKPOINT_KEY": str(key), "LOOM_OTEL_REASONING_STORE": "memory:"},
        "LOOM_OTEL_CHECKPOINT_KEY",
        str(key),
        "No such file or directory",
        "keygen",
    )


def test_a_checkpoint_key_that_is_not_a_key_is_an_error(tmp_path):
    key = tmp_path / "key.pem"
    key.write_text("banana\n")
    refused({"LOOM_OTEL_CHECKPOINT_KEY": str(key)}, "LOOM_OTEL_CHECKPOINT_KEY", str(key), "not an Ed25519")


def test_a_relative_checkpoint_key_is_an_error():
    refused({"LOOM_OTEL_CHECKPOINT_KEY": "banana"}, "LOOM_OTEL_CHECKPOINT_KEY", "'banana'", "absolute")


def test_a_real_checkpoint_key_is_accepted(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from loom_otel.core._evidence._journal._checkpoint import Signer

    key = tmp_path / "key.pem"
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key.write_bytes(pem)
    assert Signer.from_file(key)
    with instrumented(
        AnthropicInstrumentor(), environ={"LOOM_OTEL_CHECKPOINT_KEY": str(key), "LOOM_OTEL_REASONING_STORE": "memory:"}
    ):
        pass


def test_opting_out_is_still_silent_for_what_it_turns_off():
    with instrumented(
        AnthropicInstrumentor(), environ={"LOOM_OTEL_REASONING": "false", "LOOM_OTEL_REASONING_STORE": "banana"}
    ):
        pass
