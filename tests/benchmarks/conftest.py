"""What the benchmarks' tests share: they run benchmarks built for processes of their own
inside the test run's, and two things of the test run would weigh on them for nothing.

- They start ``synopsis serve`` replicas, upstreams and workers in processes of their own,
  which run what other tests cover already: they are started unmeasured (see
  :mod:`tests.unmeasured`).
- A benchmark collects the garbage before each call it times, so that no call pays for the
  garbage of another; in a test worker that has imported the whole suite, each collection
  walked every object of it (about a second a test). The worker's objects are frozen while
  a module runs: a collection walks what the benchmark made.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import pytest

from tests.unmeasured import MEASURE_CHILDREN

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="module", autouse=True)
def unmeasured_children() -> Iterator[None]:
    """Module-scoped, so that it holds while the modules' own module-scoped fixtures run the
    benchmarks."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(MEASURE_CHILDREN, raising=False)
        yield


@pytest.fixture(scope="module", autouse=True)
def frozen_heap() -> Iterator[None]:
    """The objects alive when the module starts left out of every collection until it ends."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
