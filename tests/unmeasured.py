"""Child processes that coverage leaves alone.

Under ``make test`` coverage measures each Python process the tests start (``patch =
["subprocess"]`` in pyproject.toml) when the variable below, which it sets in the test's own
process, is in the child's environment. A child that runs what tests in process cover
already (an example script, a benchmark's servers) is started without it: traced, it takes
about twice the CPU (importing a framework, loading a vocabulary), and its data is combined
at the end of the run for nothing. The command-line tests keep theirs measured: the CLI's
own code runs there.
"""

from __future__ import annotations

import os

MEASURE_CHILDREN = "COVERAGE_PROCESS_CONFIG"


def unmeasured_environ() -> dict[str, str]:
    """This process's environment, but for what would have coverage measure a child."""
    return {k: v for k, v in os.environ.items() if k != MEASURE_CHILDREN}
