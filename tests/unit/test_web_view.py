"""Pure parts of the web view: the map's projection keeps apart what is apart, and a fact's
source is named in words."""

from __future__ import annotations

import numpy as np

from strata.app.web.topic_map import HEIGHT, MARGIN, WIDTH, layout, project
from strata.app.web.view import source_words


def test_the_projection_keeps_two_topics_apart() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=64), rng.normal(size=64)
    vectors = np.vstack([a + 0.05 * rng.normal(size=(5, 64)),
                         b + 0.05 * rng.normal(size=(5, 64))]).astype(np.float32)
    coords = project(vectors)
    within = max(np.linalg.norm(coords[i] - coords[j]) for i in range(5) for j in range(5))
    between = min(np.linalg.norm(coords[i] - coords[j]) for i in range(5) for j in range(5, 10))
    assert between > 5 * within


def test_the_layout_fits_the_picture_and_names_each_episode() -> None:
    vectors = np.eye(4, 8, dtype=np.float32)
    points = layout([10, 11, 12, 13], [0, 1, 2, 0], [0.0, 0.5, 1.0, 2.0],
                    ["a", "b", "c", "d"], vectors)
    assert [p.episode_id for p in points] == [10, 11, 12, 13]
    assert [p.level for p in points] == ["leaf", "topic", "era", "leaf"]
    assert all(MARGIN <= p.x <= WIDTH - MARGIN and MARGIN <= p.y <= HEIGHT - MARGIN
               for p in points)
    assert points[3].r == points[0].r + 6.0  # salience is clipped to 1
    single = layout([5], [0], [0.5], ["only"], vectors[:1])
    assert (single[0].x, single[0].y) == (WIDTH / 2, HEIGHT / 2)
    assert layout([], [], [], [], vectors[:0]) == []


def test_sources_are_named_in_words() -> None:
    assert source_words("user") == "your conversation"
    assert source_words("research") == "research"
    assert source_words("connector:calendar") == "connector calendar"
    assert source_words("external-agent:claude") == "agent claude"
    assert source_words("dmn") == "the bot's own reflection"
