"""The nine background jobs (docs/architecture.md), one module each. `all_jobs()` lists them in the
order a check runs them: sync and extraction first, so synthesis and reflection see their
results; the memory life cycle last. `default_registry()` is the runner's registry of them.
The jobs import `strata.cognition.registry` and `common`, never each other (an import-linter
`independence` contract)."""

from __future__ import annotations

from strata.cognition.registry import AnyJob, JobRegistry


def all_jobs() -> list[AnyJob]:
    from strata.cognition.jobs.connector_sync import ConnectorSyncJob
    from strata.cognition.jobs.consolidate import ConsolidateJob
    from strata.cognition.jobs.decay import DecayJob
    from strata.cognition.jobs.dmn import DmnJob
    from strata.cognition.jobs.extract import FactExtractionJob
    from strata.cognition.jobs.geo import GeoPatternsJob
    from strata.cognition.jobs.patterns import PatternMatchJob
    from strata.cognition.jobs.research import ResearchJob
    from strata.cognition.jobs.synthesis import SynthesisJob

    return [
        ConnectorSyncJob(),
        FactExtractionJob(),
        PatternMatchJob(),
        GeoPatternsJob(),
        SynthesisJob(),
        DmnJob(),
        ResearchJob(),
        ConsolidateJob(),
        DecayJob(),
    ]


def default_registry() -> JobRegistry:
    """The nine background jobs (docs/architecture.md), in the order a check runs them."""
    return JobRegistry(all_jobs())
