"""The benchmarks' tests start ``synopsis serve`` replicas, upstreams and workers in processes
of their own. Those processes run what other tests cover already; under coverage each would
trace itself (loading a vocabulary takes twice as long traced) and write its data for the
run to combine. They are started unmeasured: coverage measures a child process only when the
variable below, set by coverage in the test's process, is in the child's environment."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

MEASURE_CHILDREN = "COVERAGE_PROCESS_CONFIG"
"""How coverage's ``patch = ["subprocess"]`` passes its settings to a child process."""


@pytest.fixture(scope="module", autouse=True)
def unmeasured_children() -> Iterator[None]:
    """Module-scoped, so that it holds while the modules' own module-scoped fixtures run the
    benchmarks."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(MEASURE_CHILDREN, raising=False)
        yield
