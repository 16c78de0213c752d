"""Hypothesis profiles for the whole suite, chosen by ``HYPOTHESIS_PROFILE`` (default ``quick``).

``quick`` (``make test``) runs 50 examples per property: enough for the strategies here, which
lean towards small histories with every kind of message, to reach the boundaries a property is
about on most runs, while keeping the suite inside a few minutes on two cores. ``deep``
(``make test-deep``, for a nightly run) runs 400 (the largest count any test used before there
were profiles) and turns up the rarer shapes.

Both build on the profile Hypothesis picked for this environment. Off CI that is its default:
each run draws new examples and the database in ``.hypothesis/`` replays any failure first, so
developers' runs add up to far more than 50 examples. On CI Hypothesis picks its ``ci``
profile, which derandomizes, so a pull request's check gives the same verdict every time and
fails only for the change under test; ``deep`` turns randomness back on there, so each nightly
run explores new inputs. Tests do not set their own ``max_examples``: the profile decides.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, settings

from tests.postgres import (  # noqa: F401 - fixtures
    RUN_FOLDER,
    begin_run,
    end_run,
    postgres_url,
    server,
)
from tests.ui.artefacts import screenshots_note

if TYPE_CHECKING:
    import pytest

_AMBIENT = settings.default  # "ci" when Hypothesis detects a CI run, "default" otherwise

_COMMON = settings(
    _AMBIENT,
    # Under coverage, with two workers on two shared cores, an example's run time says more
    # about the neighbours than about the code; the per-test timeout bounds a real slowdown.
    deadline=None,
    # The same goes for generation time. Other health checks stay on.
    suppress_health_check=[HealthCheck.too_slow],
    # A failure on a machine without the database is reproducible from the log alone.
    print_blob=True,
)

settings.register_profile("quick", _COMMON, max_examples=50)
settings.register_profile("deep", _COMMON, max_examples=400, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))

# One PostgreSQL server for the run (tests/postgres.py): its fixture, its start and its stop.


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controlling process, not an xdist worker
        begin_run()
        _trust_no_authority()


def _trust_no_authority() -> None:
    """Every server a test speaks to is on 127.0.0.1, in plain HTTP; yet each HTTP client
    made (an SDK's, a proxy's for its upstreams, a test's own) first loaded the machine's
    certificate authorities, about 20 ms of CPU each, more than a thousand times a run. The
    run trusts an empty folder of them instead (httpx reads ``SSL_CERT_FILE``, else
    ``SSL_CERT_DIR``; OpenSSL too), in the workers and in the commands they start, which
    inherit the variables. Nothing the tests do verifies a certificate."""
    empty = Path(os.environ[RUN_FOLDER]) / "no-certificate-authorities"
    empty.mkdir(exist_ok=True)
    os.environ.pop("SSL_CERT_FILE", None)
    os.environ["SSL_CERT_DIR"] = str(empty)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        end_run()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The run ends by naming where the browser tests left their screenshots (tests/ui)."""
    note = screenshots_note()
    if note is not None:
        terminalreporter.write_line(note)
