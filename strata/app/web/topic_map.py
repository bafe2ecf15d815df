"""The topic map for the web view: a person's live episodes laid out in 2-D, as SVG points.

The roll-up's UMAP layout (strata.app.memory_map) costs seconds of JIT warm-up, too slow for a
page view; a PCA of the same embeddings (numpy's SVD, milliseconds) keeps near topics near, which
is all a map to click through needs. The SVG itself is written by the template, so every text
on it goes through Jinja's escaping. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

WIDTH, HEIGHT, MARGIN = 640.0, 400.0, 28.0
LEVEL_NAMES = {0: "leaf", 1: "topic", 2: "era"}


@dataclass(frozen=True, slots=True)
class MapPoint:
    episode_id: int
    x: float
    y: float
    r: float
    level: str
    label: str


def project(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """(n, 2) coordinates: the first two principal components (zeros where there are fewer)."""
    n = vectors.shape[0]
    out = np.zeros((n, 2), dtype=np.float64)
    if n < 2:
        return out
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    k = min(2, len(s))
    out[:, :k] = u[:, :k] * s[:k]
    return out


def _fit(column: npt.NDArray[np.float64], size: float) -> npt.NDArray[np.float64]:
    low, high = float(column.min()), float(column.max())
    if high - low < 1e-12:
        return np.full_like(column, size / 2)
    return MARGIN + (column - low) / (high - low) * (size - 2 * MARGIN)


def layout(ids: Sequence[int], levels: Sequence[int], salience: Sequence[float],
           labels: Sequence[str], vectors: npt.NDArray[np.float32]) -> list[MapPoint]:
    if not ids:
        return []
    coords = project(vectors)
    xs, ys = _fit(coords[:, 0], WIDTH), _fit(coords[:, 1], HEIGHT)
    return [
        MapPoint(eid, round(float(x), 1), round(float(y), 1),
                 round(5.0 + 3.0 * lvl + 6.0 * max(0.0, min(1.0, sal)), 1),
                 LEVEL_NAMES.get(lvl, "leaf"), label)
        for eid, lvl, sal, label, x, y in zip(ids, levels, salience, labels, xs, ys, strict=True)
    ]
