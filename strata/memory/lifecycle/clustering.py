"""Clustering of apex episode embeddings for the roll-up (docs/memory.md) and the map.

L2-normalise, UMAP to 10 dimensions (cosine, pinned `random_state`, n_neighbors = min(15,
n − 1)), then HDBSCAN (min cluster size 10, euclidean). Noise (label −1) is never assigned to a
cluster. The same input gives the same labels: UMAP with a fixed `random_state` runs single-
threaded and deterministically, and HDBSCAN has no randomness.

`allow_single_cluster=True`: plain HDBSCAN never returns the root as a cluster, so a set of
apexes that is all about one topic comes back as all noise (or is split into arbitrary
sub-clusters) — such a person's leaves would then never roll up and the apex set would grow
without bound. Allowing the single cluster lets that case become one parent; well separated
topics still come back as separate clusters (the root only wins when it is more stable than
its children), which the tests check.

Cluster selection "leaf", not HDBSCAN's default "eom": excess-of-mass prefers the larger,
more stable parent, and on topics of 10–20 episodes each (what a 50-leaf round sees) it merged
unrelated topics into one cluster (job search + piano + a wedding, in the demo data of
bench/demo_map.py). A wrong merge cannot be undone — the children are tombstoned, then deleted
— while a missed one is simply retried at the next round, so the finer, homogeneous leaf
clusters are chosen; points outside them stay noise.

umap and hdbscan are imported inside the functions: importing them costs seconds and the first
UMAP fit in a process seconds more of JIT compile, which must stay off start-up and the turn
path. The `cluster` extra installs them. Imports `bot` leaf modules only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from strata.core.errors import StrataError

RANDOM_STATE = 42


class ClusteringUnavailableError(StrataError):
    """umap-learn / hdbscan are not installed."""


@dataclass(frozen=True, slots=True)
class ClusterParams:
    n_components: int = 10
    min_cluster_size: int = 10
    random_state: int = RANDOM_STATE
    max_neighbors: int = 15
    allow_single_cluster: bool = True
    selection: str = "leaf"  # HDBSCAN cluster_selection_method: "leaf" or "eom"


def _import() -> tuple[Any, Any]:
    try:
        import hdbscan
        import umap
    except ImportError as exc:  # pragma: no cover - the dev extra installs both
        raise ClusteringUnavailableError(
            f"clustering needs umap-learn and hdbscan ({exc.name} is missing): "
            "pip install 'strata[cluster]'"
        ) from None
    return umap, hdbscan


def normalise(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero)."""
    x = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def embed_umap(
    vectors: npt.NDArray[np.floating], n_components: int, params: ClusterParams = ClusterParams()
) -> npt.NDArray[np.float32]:
    """UMAP of the L2-normalised rows to `n_components` dimensions (cosine metric)."""
    x = normalise(vectors)
    n = len(x)
    if n < 3:
        raise ValueError(f"UMAP needs at least 3 points, got {n}")
    umap, _ = _import()
    reducer = umap.UMAP(
        n_components=min(n_components, n - 2),
        n_neighbors=min(params.max_neighbors, n - 1),
        metric="cosine",
        random_state=params.random_state,
        n_jobs=1,  # a pinned random_state is single-threaded anyway (and deterministic)
        # Tiny sets would otherwise trigger the spectral-init fallback warnings.
        init="spectral" if n > n_components + 1 else "random",
    )
    return np.asarray(reducer.fit_transform(x), dtype=np.float32)


def cluster_labels(
    vectors: npt.NDArray[np.floating], params: ClusterParams = ClusterParams()
) -> npt.NDArray[np.int64]:
    """One label per row: a cluster number ≥ 0, or −1 for noise.

    Fewer rows than the minimum cluster size cannot form a cluster: all noise, no fit.
    """
    n = len(vectors)
    if n < max(params.min_cluster_size, 3):
        return np.full(n, -1, dtype=np.int64)
    reduced = embed_umap(vectors, params.n_components, params)
    _, hdbscan = _import()
    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=params.min_cluster_size,
        metric="euclidean",
        allow_single_cluster=params.allow_single_cluster,
        cluster_selection_method=params.selection,
    )
    labels = np.asarray(clusterer.fit_predict(reduced), dtype=np.int64)
    return _canonical(labels)


def _canonical(labels: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Renumber clusters in order of their first member, so labels read the same every run."""
    out = np.full_like(labels, -1)
    mapping: dict[int, int] = {}
    for i, label in enumerate(labels.tolist()):
        if label >= 0:
            out[i] = mapping.setdefault(label, len(mapping))
    return out
