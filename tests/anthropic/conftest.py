from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.anthropic_sdk import mark_sdk_modes


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A call mode the installed anthropic SDK lacks skips, naming the release that has it."""
    mark_sdk_modes(items, Path(__file__).parent)
