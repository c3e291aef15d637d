"""Scoring over the concept graph: spreading activation and personalised PageRank as sparse
matrix-vector products, and the strongest single path to a node (for explain).

Both methods walk the row-stochastic transition matrix P of the weighted graph: each node
passes its activation to its neighbours in proportion to the weights of the edges between them
(an edge's weight is its type's weight; parallel edges of different types add up).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from recall_kit_graph.graph import ConceptGraph


@dataclass
class Transition:
    """P (row-stochastic, n x n, CSR) and its transpose (CSR, for P^T @ x), precomputed once."""

    forward: sparse.csr_matrix
    backward: sparse.csr_matrix
    dangling: np.ndarray

    @property
    def size(self) -> int:
        return int(self.forward.shape[0])


def transition_matrix(graph: ConceptGraph, type_weights: np.ndarray) -> Transition:
    """P[u, v] = w(u, v) / sum_x w(u, x), where w(u, v) sums the weights of the typed edges
    between u and v (each edge counted in both directions); rows of isolated nodes are zero."""
    n = graph.node_count
    weights = type_weights[graph.types] if graph.edge_count else np.zeros(0)
    keep = weights > 0
    rows = np.concatenate([graph.sources[keep], graph.targets[keep]])
    cols = np.concatenate([graph.targets[keep], graph.sources[keep]])
    data = np.concatenate([weights[keep], weights[keep]])
    matrix = sparse.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr()  # sums duplicates
    totals = np.asarray(matrix.sum(axis=1)).ravel()
    inverse = np.zeros(n)
    inverse[totals > 0] = 1.0 / totals[totals > 0]
    forward = sparse.diags(inverse) @ matrix
    forward = sparse.csr_matrix(forward)
    return Transition(forward=forward, backward=sparse.csr_matrix(forward.T), dangling=totals == 0)


def spreading_activation(
    transition: Transition, seeds: np.ndarray, steps: int, decay: float
) -> np.ndarray:
    """Activation summed over `steps` steps of spreading from `seeds`.

    a_0 = seeds; a_{t+1} = decay * P^T a_t; score = a_1 + ... + a_steps. `seeds` is (n,) or
    (n, queries); the result has the same shape. The seeds' own mass (a_0) is not counted.
    """
    activation = np.asarray(seeds, dtype=np.float64)
    total = np.zeros_like(activation)
    for _ in range(steps):
        activation = decay * (transition.backward @ activation)
        total += activation
    return total


def personalized_pagerank(
    transition: Transition,
    personalization: np.ndarray,
    alpha: float = 0.85,
    max_iter: int = 100,
    tol: float = 1.0e-6,
) -> np.ndarray:
    """Personalised PageRank by power iteration, as networkx.pagerank computes it:

    x <- alpha * (P^T x + (sum of x over dangling nodes) * p) + (1 - alpha) * p, with p the
    personalization normalised to sum 1, until sum |x - x_prev| < n * tol. `personalization` is
    (n,) or (n, queries): one column per query, each frozen once it has converged, so a batch
    gives exactly the scores each query gets alone. Starts from p; networkx starts from the
    uniform vector, which changes only the iterations.
    """
    p = np.asarray(personalization, dtype=np.float64)
    single = p.ndim == 1
    if single:
        p = p[:, None]
    sums = p.sum(axis=0)
    sums[sums == 0] = 1.0
    p = p / sums
    n = transition.size
    x = p.copy()
    dangling = transition.dangling
    active = np.arange(x.shape[1])
    for _ in range(max_iter):
        current, target = x[:, active], p[:, active]
        dangling_mass = current[dangling].sum(axis=0) if dangling.any() else np.zeros(active.size)
        updated = alpha * (transition.backward @ current + target * dangling_mass) + (1.0 - alpha) * target
        x[:, active] = updated
        active = active[np.abs(updated - current).sum(axis=0) >= n * tol]
        if active.size == 0:
            break
    return x[:, 0] if single else x


def strongest_paths(
    transition: Transition,
    seeds: dict[int, float],
    targets: list[int],
    steps: int,
    decay: float,
) -> dict[int, list[int]]:
    """For each target, the walk of 1..`steps` steps from a seed with the largest product
    seed * decay^len * prod P[u, v] (max-product dynamic programming): the path that carried
    the most activation to it. Targets no walk reaches are left out."""
    n = transition.size
    forward = transition.forward
    best = np.zeros(n)
    for node, weight in seeds.items():
        best[node] = weight
    layers: list[tuple[np.ndarray, np.ndarray]] = []  # per step: (value, parent)
    for _ in range(steps):
        frontier = np.flatnonzero(best)
        starts, ends = forward.indptr[frontier], forward.indptr[frontier + 1]
        counts = ends - starts
        parents = np.repeat(frontier, counts)
        index = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)]) if len(frontier) else np.zeros(0, dtype=np.int64)
        children = forward.indices[index]
        values = best[parents] * forward.data[index] * decay
        value_layer = np.zeros(n)
        parent_layer = np.full(n, -1, dtype=np.int64)
        if len(values):
            order = np.lexsort((-values, children))
            children, values, parents = children[order], values[order], parents[order]
            first = np.ones(len(children), dtype=bool)
            first[1:] = children[1:] != children[:-1]
            value_layer[children[first]] = values[first]
            parent_layer[children[first]] = parents[first]
        layers.append((value_layer, parent_layer))
        best = value_layer
    paths: dict[int, list[int]] = {}
    for target in targets:
        values = [layer[0][target] for layer in layers]
        if not values or max(values) <= 0:
            continue
        step = int(np.argmax(values))
        path = [target]
        node = target
        for layer_index in range(step, -1, -1):
            node = int(layers[layer_index][1][node])
            path.append(node)
        paths[target] = path[::-1]
    return paths
