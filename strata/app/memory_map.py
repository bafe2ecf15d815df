"""The memory map: a person's apex episodes drawn in 2-D, coloured by topic cluster.

The clusters are the roll-up's (strata.memory.lifecycle.clustering: UMAP to 10 dims, HDBSCAN);
the layout is the same UMAP to 2 dims, so an operator sees the topics at a glance; noise is
grey; marker shape shows the level. matplotlib (the `cluster` extra) is imported inside the
function, with the file-only Agg backend. The episodes come from `strata.memory.store.episodes`.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from strata.core.errors import StrataError
from strata.core.private_files import write_private
from strata.memory.lifecycle.clustering import (
    ClusteringUnavailableError,
    ClusterParams,
    cluster_labels,
    embed_umap,
)
from strata.memory.store.episodes import Episode, EpisodeRepo

MIN_POINTS = 4
_MARKERS = {0: "o", 1: "s", 2: "*"}
_LEVEL = {0: "leaf", 1: "topic", 2: "era"}
# The steps of `draw_map`, in order, as `step` names them when each starts: the layout and the
# clustering can take a minute (UMAP compiles on its first use in a process).
STEPS = ("reading episodes", "layout (UMAP, the first run compiles)", "topic clusters",
         "drawing")


@dataclass(frozen=True, slots=True)
class MapResult:
    path: Path
    points: int
    clusters: int
    noise: int


def _draw(episodes: list[Episode], coords: npt.NDArray[np.float32],
          labels: npt.NDArray[np.int64], title: str, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the dev extra installs it
        raise ClusteringUnavailableError(
            "the memory map needs matplotlib: pip install 'strata[cluster]'") from None
    fig, ax = plt.subplots(figsize=(8, 6), dpi=110)
    cmap = plt.get_cmap("tab10" if labels.max(initial=-1) < 10 else "tab20")
    levels = np.array([e.level for e in episodes])
    for level, marker in _MARKERS.items():
        at = levels == level
        if not at.any():
            continue
        noise = at & (labels < 0)
        ax.scatter(coords[noise, 0], coords[noise, 1], c="#b0b0b0", marker=marker,
                   s=30 + 40 * level, edgecolors="none", label=f"{_LEVEL[level]} (noise)")
        clustered = at & (labels >= 0)
        if clustered.any():
            ax.scatter(coords[clustered, 0], coords[clustered, 1],
                       c=[cmap(int(k) % cmap.N) for k in labels[clustered]], marker=marker,
                       s=30 + 40 * level, edgecolors="white", linewidths=0.5,
                       label=_LEVEL[level])
    for k in sorted(set(labels.tolist()) - {-1}):
        members = np.flatnonzero(labels == k)
        centre = coords[members].mean(axis=0)
        best = max(members, key=lambda i: (episodes[i].level, episodes[i].salience))
        text = episodes[best].key_terms or episodes[best].summary
        ax.annotate(f"{k}: {text[:32]}", centre, fontsize=8, ha="center",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.75})
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="best", fontsize=8, markerscale=0.8)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    write_private(out, png.getvalue())  # drawn from a person's memory: 0600


async def draw_map(repo: EpisodeRepo, owner_id: int, name: str, out: str | Path,
                   params: ClusterParams | None = None,
                   step: Callable[[str], None] = lambda _: None) -> MapResult:
    """Draw the owner's live apex episodes (all channels, all levels) to the PNG `out`;
    `step` is told each of `STEPS` as it starts."""
    step(STEPS[0])
    episodes = await repo.owner_apexes(owner_id)
    if len(episodes) < MIN_POINTS:
        raise StrataError(
            f"{name} has {len(episodes)} apex episodes: the map needs at least {MIN_POINTS}")
    path = Path(out).expanduser()
    if not path.parent.is_dir():
        raise StrataError(f"cannot write {path}: folder {path.parent} does not exist")
    vectors = await repo.embeddings([e.id for e in episodes])
    params = params or ClusterParams()
    step(STEPS[1])
    coords = await asyncio.to_thread(embed_umap, vectors, 2, params)
    step(STEPS[2])
    labels = await asyncio.to_thread(cluster_labels, vectors, params)
    clusters = len(set(labels.tolist()) - {-1})
    noise = int((labels < 0).sum())
    title = f"{name}: {len(episodes)} apex episodes, {clusters} clusters, {noise} noise"
    step(STEPS[3])
    await asyncio.to_thread(_draw, episodes, coords, labels, title, path)
    return MapResult(path, len(episodes), clusters, noise)
