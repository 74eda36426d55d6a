from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from . import harness

PARALLEL = 3
"""Apps run at once while prefetching (each mostly waits on its imports, its model calls and its exporter)."""


@pytest.fixture(scope="session", autouse=True)
def _workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The runs are cached per session; their files live in one session directory, and the bare runs'
    fork servers live as long as the session."""
    harness.WORKDIR[0] = workdir = tmp_path_factory.mktemp("frameworks")
    yield workdir
    harness.close_fork_servers()


@pytest.fixture
def framework_venv(request: pytest.FixtureRequest, _prefetched: None) -> None:
    case = request.node.callspec.params["case"]
    if not (harness.venv(case.framework) / ".ready").is_file():
        pytest.fail(f"no venv for {case.framework} at {harness.venv(case.framework)}: run `bash .ci/frameworks.sh`")


@pytest.fixture(scope="session")
def _prefetched(request: pytest.FixtureRequest, _workdir: Path) -> None:
    """Runs every (case, mode) the session selected, a few at a time, before the first check reads one
    (the runs are cached; each check then only reads its run)."""
    wanted: dict[tuple[harness.Case, str], None] = {}
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            isinstance(params.get("case"), harness.Case)
            and (harness.venv(params["case"].framework) / ".ready").is_file()
        ):
            wanted[(params["case"], params["mode"])] = None
    cases = {case: None for case, _ in wanted}
    with ThreadPoolExecutor(PARALLEL) as pool:
        for future in [pool.submit(harness.bare, case) for case in cases] + [
            pool.submit(harness.instrumented, case, mode) for case, mode in wanted
        ]:
            future.result()
