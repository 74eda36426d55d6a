"""Which tests share one pytest-xdist worker. ``.ci/run`` runs each suite with ``-n 2 --dist loadgroup``;
every test is then a unit of work of its own, except the tests of a group, which one worker runs
together. pytest-xdist's own ``xdist_group`` marks do not group under pytest 9 (they rename
``item._nodeid``, which pytest 9 no longer reads), so the groups are named here, by path."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from xdist.scheduler import LoadScopeScheduling

GROUPS = {
    # the matrix prefetches every run the session selected, once per worker that runs one of its tests
    "tests/frameworks/": "frameworks",
    # one Phoenix server at a time
    "tests/e2e_trail/test_phoenix": "phoenix",
    "tests/viewer/test_browser.py": "phoenix",
    "tests/viewer/test_phoenix": "phoenix",
    "tests/e2e_trail/test_viewer_reads.py": "phoenix",
}
SHARED = {"phoenix": "phoenix"}
"""A session fixture each worker would start again (Phoenix: minutes on a busy machine) -> the group of
every test that uses it (``misplaced`` finds one outside: its worker started a second server)."""


def group_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its group's name, or its own node id."""
    return next((group for prefix, group in GROUPS.items() if nodeid.startswith(prefix)), nodeid)


def misplaced(items: Iterable[pytest.Item]) -> list[str]:
    """The tests that use a ``SHARED`` fixture outside its group, each with the group it belongs in."""
    return [
        f"{item.nodeid} (group {group!r})"
        for item in items
        for fixture, group in SHARED.items()
        if fixture in getattr(item, "fixturenames", ()) and group_of(item.nodeid) != group
    ]


class GroupScheduling(LoadScopeScheduling):
    """``--dist loadgroup`` with the groups above (the largest unit is handed out first)."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)
