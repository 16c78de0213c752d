"""What the proxy counts, in Prometheus's text format at ``GET /metrics``.

Each app has a registry of its own, so two apps in one process (tests, replicas) never mix
their counts.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from synopsis.proxy.tally import failed

__all__ = ["Errors", "Metrics"]

_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Errors:
    """The errors counter: each kind counted is noted on the request it was counted for too,
    as the error its record ends with."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter

    def labels(self, kind: str) -> Counter:
        failed(kind)
        return self.counter.labels(kind)


class Metrics:
    """The proxy's counters and histograms (names under ``synopsis_proxy_``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "synopsis_proxy_requests", "Requests answered, by route and status.",
            ["route", "status"], registry=r,
        )  # fmt: skip
        self.compactions = Counter(
            "synopsis_proxy_compactions", "Requests whose history was compacted, by route.",
            ["route"], registry=r,
        )  # fmt: skip
        self.tokens_before = Counter(
            "synopsis_proxy_tokens_before",
            "Tokens of the histories before compaction, the session's summary in place of what "
            "it stands for.",
            ["route"], registry=r,
        )  # fmt: skip
        self.tokens_after = Counter(
            "synopsis_proxy_tokens_after", "Tokens of the histories as forwarded.",
            ["route"], registry=r,
        )  # fmt: skip
        self.summarizer_calls = Counter(
            "synopsis_proxy_summarizer_calls", "Summarizer calls, by summarizer and outcome.",
            ["summarizer", "outcome"], registry=r,
        )  # fmt: skip
        self.summarizer_seconds = Histogram(
            "synopsis_proxy_summarizer_seconds", "Seconds per summarizer call.",
            ["summarizer"], buckets=_LATENCY, registry=r,
        )  # fmt: skip
        self.compaction_seconds = Histogram(
            "synopsis_proxy_compaction_seconds",
            "Seconds the proxy spent deciding and compacting, per request.",
            ["route"], buckets=_LATENCY, registry=r,
        )  # fmt: skip
        self.upstream_seconds = Histogram(
            "synopsis_proxy_upstream_seconds",
            "Seconds from sending a request upstream to its response headers.",
            ["route"], buckets=_LATENCY, registry=r,
        )  # fmt: skip
        self.errors = Errors(Counter(
            "synopsis_proxy_errors", "Errors, by kind.", ["kind"], registry=r,
        ))  # fmt: skip
        self.unknown_models = Counter(
            "synopsis_unknown_model",
            "Models a request named that the model table does not know, each counted at first "
            "sight: their window was assumed (200,000 tokens).",
            registry=r,
        )
        self.retries = Counter(
            "synopsis_proxy_overflow_retries",
            "Requests the upstream refused as too long, compacted harder and sent again.",
            ["route"], registry=r,
        )  # fmt: skip

        self.records_dropped = Counter(
            "synopsis_proxy_records_dropped",
            "Request records not written to the store: dropped from a full queue, or refused "
            "by the store.",
            registry=r,
        )

    def unknown_model(self) -> None:
        self.unknown_models.inc()

    def summarizer_call(self, name: str, seconds: float, ok: bool) -> None:
        self.summarizer_calls.labels(name, "ok" if ok else "failed").inc()
        self.summarizer_seconds.labels(name).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
