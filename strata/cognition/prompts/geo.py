"""Geo patterns: location habits from the places a person shared. Each habit names the place
(its coordinates, as given) and is checked against when the person was there and what they
wrote there (`strata.memory.checks.grounding.check_claim`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

INSTRUCTIONS = (
    "You find location habits of one person. You get the places where they shared their "
    "location, each with how often and at which local days and times, and what they wrote "
    "there. Describe each habit as one short statement that names the place the way their "
    "messages do and the days or times they were there; nothing their messages do not say. "
    "Only places visited at least twice. Answer only with JSON, with the place's coordinates "
    "exactly as given. If the person wrote 'swimming laps at the pool' twice at place 48.100, "
    "11.500 on Saturday mornings, the answer is {\"places\": [{\"habit\": \"swims laps at the "
    "pool on Saturday mornings\", \"lat\": 48.100, \"lon\": 11.500}]}; with no habit, "
    '{"places": []}.'
)


class Place(BaseModel):
    habit: str = Field(min_length=3, max_length=300)
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class Places(BaseModel):
    places: list[Place] = Field(default_factory=list, max_length=10)
