"""Prometheus metrics for operators (`/metrics`), in a registry of their own per app so that
two apps in one process (the tests) never clash, and instrumentation that costs a counter
increment: the model call (`strata.bot.timed_chat`), recall (`strata.bot.recall_record`), each
turn's outcome, the replies' checks and token charges. Counted where the turn runs, in every
process; the web server (`strata.app.web`) only renders them. Imports `strata.core` and
prometheus-client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from strata.core.types import TurnResult

LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.turns = Counter("strata_turns", "Turns answered, by platform and outcome (ok, "
                             "failed, command)", ["platform", "outcome"], registry=r)
        self.recall_seconds = Histogram("strata_recall_seconds", "Turn-zero recall latency",
                                        buckets=LATENCY_BUCKETS, registry=r)
        self.model_seconds = Histogram("strata_model_call_seconds", "Chat model call latency",
                                       ["outcome"], buckets=LATENCY_BUCKETS, registry=r)
        self.model_failures = Counter("strata_model_failures", "Chat model calls that failed",
                                      registry=r)
        self.tokens = Counter("strata_tokens", "Model tokens charged, by purpose (job)",
                              ["purpose"], registry=r)
        self.queue_depth = Gauge("strata_turn_queue_depth", "Turns waiting in the shared queue",
                                 registry=r)
        # Read from the database at each scrape, so they cover every process's runs.
        self.job_runs = Gauge("strata_job_runs", "Kept background job runs, by job",
                              ["job"], registry=r)
        self.job_failures = Gauge("strata_job_failed_runs", "Kept job runs that failed, by job",
                                  ["job"], registry=r)
        self.job_tokens = Gauge("strata_job_tokens", "Model tokens of the kept job runs, by job",
                                ["job"], registry=r)
        self.web_refused = Counter("strata_web_refused", "Web view requests refused",
                                   ["reason"], registry=r)
        self.reply_corrections = Counter(
            "strata_reply_corrections", "Replies corrected before they were sent, by reason "
            "(reminder, memory, forget: a claim no tool made true; reminder_asked: a reminder "
            "asked for and not set; echo: the prompt repeated)",
            ["reason"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def jobs(self, totals: Sequence[tuple[str, int, int, int]]) -> None:
        """The job totals (`JobRunRepo.totals_by_job`), read at scrape time."""
        for job, runs, failed, tokens in totals:
            self.job_runs.labels(job).set(runs)
            self.job_failures.labels(job).set(failed)
            self.job_tokens.labels(job).set(tokens)

    def turn_done(self, platform: str, result: TurnResult) -> None:
        """A turn's outcome (`TurnProcessor.on_result`): a failed one is a model error, a
        deadline or the rate limit, which the person was told about."""
        outcome = "command" if result.command else "failed" if result.failed else "ok"
        self.turns.labels(platform, outcome).inc()

    def reply_corrected(self, reason: str) -> None:
        """A reply check's catch (`strata.bot.reply_checks`)."""
        self.reply_corrections.labels(reason).inc()

    def charge(self, purpose: str, tokens: int) -> None:
        if tokens > 0:
            self.tokens.labels(purpose).inc(tokens)
