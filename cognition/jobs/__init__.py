"""The nine background jobs (docs/architecture.md), one module each. `all_jobs()` lists them in the
order a check runs them: sync and extraction first, so synthesis and reflection see their
results; the memory life cycle last."""

from __future__ import annotations

from cognition.registry import AnyJob


def all_jobs() -> list[AnyJob]:
    from cognition.jobs.capabilities import CapabilitySyncJob
    from cognition.jobs.consolidate import ConsolidateJob
    from cognition.jobs.decay import DecayJob
    from cognition.jobs.dmn import DmnJob
    from cognition.jobs.extract import FactExtractionJob
    from cognition.jobs.geo import GeoPatternsJob
    from cognition.jobs.patterns import PatternMatchJob
    from cognition.jobs.research import ResearchJob
    from cognition.jobs.synthesis import SynthesisJob

    return [
        CapabilitySyncJob(),
        FactExtractionJob(),
        PatternMatchJob(),
        GeoPatternsJob(),
        SynthesisJob(),
        DmnJob(),
        ResearchJob(),
        ConsolidateJob(),
        DecayJob(),
    ]
