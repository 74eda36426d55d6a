"""The public contract (DESIGN.md "Public contract"): names outside checks call, sorted ``__all__``s,
entry points, typed packages (httpx's test_exported_members pattern)."""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest

PUBLIC_MODULES = [
    "loom_otel.core",
    "loom_otel.core.exceptions",
    "loom_otel.core.journal",
    "loom_otel.core.observers",
    "loom_otel.core.policy",
    "loom_otel.core.runtime",
    "loom_otel.core.stores",
    "loom_otel.core.vendor",
    "loom_otel.core.vendor_helpers",
    "loom_otel.audit",
    "loom_otel.testing",
    "loom_otel.testing.simulator",
    "loom_otel.instrumentation.anthropic",
    "loom_otel.instrumentation.google_genai",
    "loom_otel.instrumentation.openai",
    "loom_otel.exporters.chain",
    "loom_otel.live",
    "loom_otel.viewer",
]

CONTRACT = {
    "loom_otel.core": [
        "ReasoningConfig",
        "configure",
        "execution",
        "step",
        "force_flush",
        "ReasoningStore",
        "FileReasoningStore",
        "MemoryReasoningStore",
        "store_from_uri",
        "ReasoningKind",
        "Reasoning",
        "ReasoningPart",
        "Untrusted",
        "CaptureCall",
        "TextLookup",
        "LoomOtelError",
        "ReasoningCaptureError",
        "ReasoningConfigError",
        "ReasoningContinuationError",
    ],
    "loom_otel.core.vendor": [
        "DeferredSend",
        "ModelCall",
        "Outgoing",
        "PlannedOutgoing",
        "ReasoningHandler",
        "ReasoningInstrumentor",
        "ResultReaders",
        "StreamAccumulator",
        "SyncStreamProxy",
        "AsyncStreamProxy",
        "Wrap",
        "Wrapper",
        "async_method",
        "sync_method",
    ],
    "loom_otel.instrumentation.anthropic": ["AnthropicInstrumentor"],
    "loom_otel.instrumentation.google_genai": ["GoogleGenAiInstrumentor"],
    "loom_otel.instrumentation.openai": ["OpenAiInstrumentor"],
    "loom_otel.exporters.chain": ["ChainedSpanExporter"],
    "loom_otel.testing": ["find_leaks", "instrumented", "reset_runtime"],
    "loom_otel.audit": ["read_reasoning", "read_reasoning_bounded", "verify", "erase_execution"],
    "loom_otel.live": ["LiveChannel", "LiveReasoningHub", "ReasoningDelta", "TextDelta", "register_sink", "flush_live"],
    # The read face (issue 44 point 4): what audit, the chained exporter, live, the viewer and the CLI use of core.
    "loom_otel.core.journal": [
        "Journal",
        "MerkleTree",
        "RECORD_SPAN",
        "chain_hash",
        "iter_records",
        "list_origins",
        "open_journal",
        "read_lines",
        "record_from_event",
        "segments",
        "verify_note",
    ],
    "loom_otel.core.stores": [
        "FileReasoningStore",
        "ReasoningStore",
        "Retention",
        "Unsealed",
        "open_sealed",
        "store_from_uri",
        "with_tenant_stores",
    ],
    "loom_otel.core.policy": [
        "Audience",
        "ReadingPolicy",
        "TenantPolicy",
        "load_policy",
        "may_read",
        "policy_from_env",
    ],
    "loom_otel.core.runtime": ["Runtime", "current_runtime", "default_journal_dir", "force_flush", "renew_after_fork"],
    "loom_otel.core.observers": ["CallObserver", "Capture", "ModelCall"],
}


def test_the_read_face_is_what_the_consumers_import(tmp_path):
    """audit, the chained exporter, live, the viewer and the CLI import no private core module
    (``.ci/private_imports.py`` counts them; import-linter forbids them)."""
    import runpy

    counter = runpy.run_path(str(Path(__file__).resolve().parents[1] / ".ci" / "private_imports.py"))
    for label, folder in counter["CONSUMERS"]:
        assert counter["private_imports"](folder) == set(), label
    planted = tmp_path / "consumer.py"
    planted.write_text(
        "if True:\n    from loom_otel.core._reading._policy import may_read as m\nimport loom_otel.core._runtime._fork\nfrom loom_otel.core import _memo, journal\n"
    )
    found = counter["private_imports"](tmp_path)
    assert found == {
        ("loom_otel.core._reading._policy", "may_read"),
        ("loom_otel.core._runtime._fork", ""),
        ("loom_otel.core._memo", ""),
    }


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_every_name_exists(name):
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    for member in exported:
        assert hasattr(module, member), f"{name}.{member}"


@pytest.mark.parametrize(("name", "members"), sorted(CONTRACT.items()))
def test_contract_names(name, members):
    module = importlib.import_module(name)
    for member in members:
        assert member in module.__all__, f"{name}.{member} is part of the public contract"


def test_the_vendor_face_leaves_the_call_skeleton_to_core():
    """A vendor sends through ``DeferredSend`` or the skeleton's wrappers, and its results go through core's
    one dispatch: the steps (``finish`` included) are not its to run, nor in either vendor module."""
    face = importlib.import_module("loom_otel.core.vendor")
    helpers = importlib.import_module("loom_otel.core.vendor_helpers")
    steps = {"prepare", "start", "sending", "sent", "delivered", "failed", "without_peers", "finish", "tap_raw_body"}
    for module in (face, helpers):
        assert steps.isdisjoint(module.__all__)
        assert not any(hasattr(module, step) for step in steps)
    public = {name for name in dir(face.DeferredSend) if not name.startswith("_")}
    assert public == {"kwargs", "open", "outgoing", "run", "run_async", "sdk", "send", "stream", "stream_async"}


def test_the_vendor_face_is_small_and_every_name_of_it_is_used():
    """About 25 objects a vendor implements and calls (the helpers apart); no name of the face or the
    helpers is left unused by every vendor."""
    import ast

    face = importlib.import_module("loom_otel.core.vendor")
    helpers = importlib.import_module("loom_otel.core.vendor_helpers")
    assert len(face.__all__) <= 27
    assert set(face.__all__).isdisjoint(helpers.__all__)
    used = set()
    vendors = Path(__file__).resolve().parents[1] / "instrumentation" / "loom_otel" / "instrumentation"
    for path in vendors.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "loom_otel.core.vendor",
                "loom_otel.core.vendor_helpers",
            ):
                used.update(alias.name for alias in node.names)
    assert set(face.__all__) | set(helpers.__all__) == used


@pytest.mark.parametrize("vendor", ["anthropic", "bedrock", "google_genai", "openai"])
def test_every_vendor_gives_readers_to_the_one_result_dispatch(vendor):
    """What a wrapped method returned is dispatched by core (``ResultReaders``) alike for every vendor: a
    vendor's adapter gives its readers and dispatches nothing itself."""
    from loom_otel.core.vendor import ResultReaders

    module = importlib.import_module(f"loom_otel.instrumentation.{vendor}._adapter")
    (adapter,) = [getattr(module, name) for name in module.__all__ if name.endswith("Adapter")]
    assert isinstance(adapter.readers, ResultReaders)
    assert type(adapter.readers).sync_result is ResultReaders.sync_result
    assert type(adapter.readers).async_result is ResultReaders.async_result
    assert not hasattr(adapter, "sync_result") and not hasattr(adapter, "async_result")


def test_simulator_is_reachable_as_the_contract_says():
    from loom_otel.testing import simulator

    assert hasattr(simulator, "Simulator")


def test_exceptions_tree():
    from loom_otel.core import LoomOtelError, ReasoningCaptureError, ReasoningConfigError

    assert issubclass(ReasoningConfigError, LoomOtelError) and issubclass(ReasoningConfigError, ValueError)
    assert issubclass(ReasoningCaptureError, LoomOtelError)


@pytest.mark.parametrize(
    ("group", "name", "target"),
    [
        ("opentelemetry_instrumentor", "loom_anthropic", "AnthropicInstrumentor"),
        ("opentelemetry_instrumentor", "loom_google_genai", "GoogleGenAiInstrumentor"),
        ("opentelemetry_instrumentor", "loom_openai", "OpenAiInstrumentor"),
        ("opentelemetry_instrumentor", "loom_bedrock", "BedrockInstrumentor"),
        ("opentelemetry_traces_exporter", "loom_chain", "ChainedSpanExporter"),
    ],
)
def test_entry_points_load(group, name, target):
    (entry_point,) = [ep for ep in importlib.metadata.entry_points(group=group) if ep.name == name]
    assert entry_point.load().__name__ == target


def test_environment_variables_are_registered_and_documented():
    (entry_point,) = [
        ep
        for ep in importlib.metadata.entry_points(group="opentelemetry_environment_variables")
        if ep.name == "loom_otel"
    ]
    module = entry_point.load()
    names = [n for n in dir(module) if n.startswith("LOOM_OTEL_")]
    assert len(names) >= 10 and all(getattr(module, n) == n for n in names)
    source = Path(module.__file__).read_text()
    for name in names:
        assert f'{name}: Final = "{name}"\n"""' in source, f"{name} has no docstring"


@pytest.mark.parametrize(
    "package",
    [
        "loom_otel/core",
        "loom_otel/audit",
        "loom_otel/testing",
        "loom_otel/cli",
        "loom_otel/live",
        "loom_otel/viewer",
        "instrumentation/loom_otel/instrumentation/anthropic",
        "instrumentation/loom_otel/instrumentation/google_genai",
        "instrumentation/loom_otel/instrumentation/openai",
        "exporters/loom_otel/exporters/chain",
    ],
)
def test_regular_packages_ship_py_typed(package):
    root = Path(__file__).resolve().parents[1]
    assert (root / package / "py.typed").exists()


def test_namespace_roots_have_no_init():
    root = Path(__file__).resolve().parents[1]
    for namespace in (
        "loom_otel",
        "instrumentation/loom_otel",
        "instrumentation/loom_otel/instrumentation",
        "exporters/loom_otel",
        "exporters/loom_otel/exporters",
    ):
        assert not (root / namespace / "__init__.py").exists(), namespace


def test_the_vendors_that_plan_a_whole_request_take_the_outgoing_steps_from_one_base():
    """Anthropic and Bedrock (Messages-shaped requests, one plan a call) subclass core's
    ``PlannedOutgoing``: joining the lineage, the plan's events and the texts put back are written once,
    in core, and neither vendor writes them again."""
    from loom_otel.core.vendor import PlannedOutgoing

    for vendor in ("anthropic", "bedrock"):
        outgoing = importlib.import_module(f"loom_otel.instrumentation.{vendor}._continuation").Outgoing
        assert issubclass(outgoing, PlannedOutgoing), vendor
        for step in ("attach", "put_back", "path"):
            assert step not in vars(outgoing), (vendor, step)
