"""Geo patterns: location habits from the places a person shared."""

from __future__ import annotations

from pydantic import BaseModel, Field

INSTRUCTIONS = (
    "You find location habits of one person. You get the places where they shared their "
    "location, each with how often and at which local days and times, and what they wrote "
    "there. Describe each habit as one short statement, e.g. 'usually at the climbing gym on "
    "Tuesday evenings'; name the place the way their messages do. Only places visited at "
    "least twice. Answer only with JSON: "
    '{"places": [{"habit": "...", "lat": 0.0, "lon": 0.0}]} — {"places": []} when there is none.'
)


class Place(BaseModel):
    habit: str = Field(min_length=3, max_length=300)
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)


class Places(BaseModel):
    places: list[Place] = Field(default_factory=list, max_length=10)
