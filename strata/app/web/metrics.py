"""Prometheus metrics for operators (`/metrics`), in a registry of their own per app so that
two apps in one process (the tests) never clash, and instrumentation that costs a counter
increment: the model call, recall, each turn's outcome and token charges.
Imports `bot` leaf modules and prometheus-client (the `web` extra).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel

from strata.core.ports import ChatModel
from strata.core.types import ChatMessage, Completion, ToolSpec, TurnResult

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


@dataclass
class TimedChat:
    """A `ChatModel` timing each call (a stream until its last part) and counting failures;
    the error itself passes through untouched."""

    inner: ChatModel
    metrics: Metrics

    async def complete(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                       model: str | None = None, max_tokens: int | None = None,
                       schema: type[BaseModel] | None = None) -> Completion:
        started, ok = time.perf_counter(), False
        try:
            done = await self.inner.complete(messages, tools=tools, model=model,
                                             max_tokens=max_tokens, schema=schema)
            ok = True
            return done
        finally:
            self._observe(started, ok)

    async def stream(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     model: str | None = None, max_tokens: int | None = None,
                     ) -> AsyncIterator[str | Completion]:
        started, ok = time.perf_counter(), False
        try:
            async for part in self.inner.stream(messages, tools=tools, model=model,
                                                max_tokens=max_tokens):
                yield part
            ok = True
        finally:
            self._observe(started, ok)

    def _observe(self, started: float, ok: bool) -> None:
        outcome = "ok" if ok else "error"
        self.metrics.model_seconds.labels(outcome).observe(time.perf_counter() - started)
        if not ok:
            self.metrics.model_failures.inc()

    def __getattr__(self, name: str) -> Any:
        # Everything else (list_models, close, the model name) is the wrapped model's.
        return getattr(self.inner, name)
