"""Supported versions (DESIGN.md "Supported versions"): one range, stated alike in pyproject.toml's
dependencies and extras, in each instrumentation's ``_instruments``, and in the floor CI installs
(.ci/constraints-floor.txt); and ``instrument()`` accepts whatever SDK version this venv has (CI runs
the suite on the floor and on the newest)."""

from __future__ import annotations

import importlib
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core import ReasoningConfig

ROOT = Path(__file__).resolve().parents[1]
SDKS = {"anthropic": "anthropic", "google_genai": "google-genai", "openai": "openai"}
OTEL = [
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-instrumentation",
    "opentelemetry-semantic-conventions",
]
FLOOR_VENV = {"anthropic": "1.6.0"}
"""SDKs the floor venv runs at a later release than their floor: anthropic's floor is 0.47 (the first
release whose thinking blocks carry signatures), but tests beyond the Anthropic ones use SDK features newer
than 0.47; the Anthropic tests run on 0.47 and 0.73 in venvs of their own (.ci/anthropic-0x.txt)."""
_REQUIREMENT = re.compile(r"^\s*(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*(?P<floor>[0-9][0-9a-z.]*)")


def _floors(requirements: list[str]) -> dict[str, str]:
    found = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is not None:
            found[match["name"].lower()] = match["floor"]
    return found


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _constraints() -> dict[str, str]:
    pins = {}
    for text in (ROOT / ".ci" / "constraints-floor.txt").read_text().splitlines():
        line = text.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            pins[name.strip().lower()] = pinned.strip()
    return pins


def _same(floor: str, pinned: str) -> bool:
    """``2.20`` (a lower bound) names the release ``2.20.0`` (a pin)."""
    return floor.split(".") == pinned.split(".")[: len(floor.split("."))] and all(
        part == "0" for part in pinned.split(".")[len(floor.split(".")) :]
    )


@pytest.mark.parametrize("package", sorted(SDKS))
def test_sdk_floor_is_one_range_everywhere(package: str) -> None:
    distribution = SDKS[package]
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    floor = _floors(extras[distribution])[distribution]
    assert _floors(extras["instruments-any"])[distribution] == floor
    instruments = importlib.import_module(f"loom_otel.instrumentation.{package}.package")._instruments
    assert _floors(list(instruments)) == {distribution: floor}
    assert _constraints()[distribution] == FLOOR_VENV.get(distribution) or _same(floor, _constraints()[distribution])


def _anthropic_0x() -> list[str]:
    """The releases of .ci/anthropic-0x.txt, in order."""
    lines = (ROOT / ".ci" / "anthropic-0x.txt").read_text().splitlines()
    return [line.partition("==")[2].strip() for line in lines if line.startswith("anthropic==")]


def test_the_anthropic_0x_venvs_run_the_floor_and_the_line_crewai_pins() -> None:
    """CI runs the Anthropic tests on the floor (pyproject.toml's lower bound) and on crewai's ~=0.73, the
    floor venv's OpenTelemetry pins otherwise (.ci/anthropic-0x.sh); the README says which releases."""
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    releases = _anthropic_0x()
    assert _same(_floors(extras["anthropic"])["anthropic"], releases[0])
    assert "0.73.0" in releases and all(release.startswith("0.") for release in releases)
    script = (ROOT / ".ci" / "anthropic-0x.sh").read_text()
    assert "grep -v '^anthropic==' .ci/constraints-floor.txt" in script
    for tests in ("tests/anthropic", "tests/continuation/anthropic"):
        assert tests in script and (ROOT / tests).is_dir()
    readme = (ROOT / "README.md").read_text()
    assert all(f"anthropic {release.rpartition('.')[0]}" in readme for release in releases)


def test_opentelemetry_floor_is_the_ci_floor() -> None:
    project = _pyproject()
    dependencies = project["dependencies"]
    assert isinstance(dependencies, list)
    floors = _floors(dependencies)
    pins = _constraints()
    for distribution in OTEL:
        assert _same(floors[distribution], pins[distribution]), distribution


def test_google_genai_two_is_supported() -> None:
    """pydantic-ai and google-adk pin google-genai < 3: the range must include 2.x."""
    floor = _floors(list(importlib.import_module("loom_otel.instrumentation.google_genai.package")._instruments))
    assert int(floor["google-genai"].split(".")[0]) == 2


@pytest.mark.parametrize("package", sorted(SDKS))
def test_instrument_accepts_the_installed_sdk(package: str) -> None:
    """``BaseInstrumentor.instrument`` silently does nothing when the installed SDK is outside
    ``_instruments``: instrumenting must wrap the SDK at the version this venv has (floor or newest)."""
    module = importlib.import_module(f"loom_otel.instrumentation.{package}")
    instrumentor_class = next(getattr(module, name) for name in module.__all__ if name.endswith("Instrumentor"))
    instrumentor = instrumentor_class()
    instrumentor.instrument(tracer_provider=TracerProvider(), config=ReasoningConfig(store="memory:"))
    try:
        assert instrumentor.is_instrumented_by_opentelemetry, f"{SDKS[package]} {version(SDKS[package])}"
    finally:
        instrumentor.uninstrument()


def test_bedrock_floor_is_one_range_everywhere() -> None:
    """botocore's floor (the first with ``reasoningContent``) in the extras and ``_instruments``; it is not
    in the floor venv (s3fs's aiobotocore pins botocore), tests/bedrock runs on it in a venv of its own."""
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    floor = _floors(extras["bedrock"])["botocore"]
    assert _floors(extras["instruments-any"])["botocore"] == floor == _floors(extras["bedrock"])["boto3"]
    instruments = importlib.import_module("loom_otel.instrumentation.bedrock.package")._instruments
    assert _floors(list(instruments)) == {"botocore": floor}
    from loom_otel.instrumentation.bedrock import BedrockInstrumentor

    instrumentor = BedrockInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), config=ReasoningConfig(store="memory:"))
    try:
        assert instrumentor.is_instrumented_by_opentelemetry, f"botocore {version('botocore')}"
    finally:
        instrumentor.uninstrument()


def test_bedrock_floor_venv_pins_the_floor_and_ci_runs_it() -> None:
    """The venv .ci/run builds for botocore's floor pins boto3 and botocore at the bedrock extra's lower
    bound, and .ci/run runs tests/bedrock in it."""
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    floors = _floors(extras["bedrock"])
    pins = {}
    for text in (ROOT / ".ci" / "constraints-botocore-floor.txt").read_text().splitlines():
        name, _, pinned = text.split("#", 1)[0].strip().partition("==")
        if name:
            pins[name.strip().lower()] = pinned.strip()
    assert pins.keys() == {"boto3", "botocore"}
    assert all(_same(floors[package], pins[package]) for package in pins)
    run = (ROOT / ".ci" / "run").read_text()
    assert "-c .ci/constraints-botocore-floor.txt" in run
    assert '"$BOTO_FLOOR/bin/python" -m pytest -q -p no:randomly tests/bedrock' in run
