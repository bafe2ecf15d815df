"""Source profiles: the one allowlist that says what each transcript source may feed.

See docs/architecture.md. A source not listed (and every `delegate:*` or `scheduled` row) is
muted: it is kept in the transcript but produces no episodes, facts or patterns. Imports
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceProfile:
    episodes: bool = False
    facts: bool = False
    geo: bool = False
    patterns: bool = False
    location: bool = False


MUTED = SourceProfile()

PROFILES: dict[str, SourceProfile] = {
    "user": SourceProfile(episodes=True, facts=True, geo=True, patterns=True, location=True),
    "external-agent:*": SourceProfile(episodes=True, facts=True),
    # Background sources that write facts directly but never episodes: the DMN (its findings
    # are `reflection` facts once the grounding rule traced them to episodes or facts; its
    # raw reply, unchecked, must not become an episode or be read for facts), proactive research
    # (`discovery` facts with their URL) and connected services (`connector:calendar`,
    # `connector:contacts`, `connector:ics` for the operator's feeds: events and contacts as
    # facts). A service's data is never the person's own words, so no patterns, and never
    # their location (a calendar's "where" is a plan, not where they are).
    "dmn": SourceProfile(facts=True),
    "research": SourceProfile(facts=True),
    "connector:*": SourceProfile(facts=True),
}


def profile_for(source: str) -> SourceProfile:
    """The profile of `source`; `prefix:*` entries match any `prefix:…` source."""
    if source in PROFILES:
        return PROFILES[source]
    prefix, sep, _ = source.partition(":")
    if sep and f"{prefix}:*" in PROFILES:
        return PROFILES[f"{prefix}:*"]
    return MUTED


def sources_with(switch: str) -> list[str]:
    """Exact source names (no wildcards) whose profile has `switch` on, for SQL filters."""
    return [s for s, p in PROFILES.items() if getattr(p, switch) and not s.endswith("*")]


def wildcard_prefixes_with(switch: str) -> list[str]:
    """Prefixes (`external-agent:`) of wildcard sources whose profile has `switch` on."""
    return [s[:-1] for s, p in PROFILES.items() if getattr(p, switch) and s.endswith("*")]
