"""Numbers that decide a ranking, a threshold or a grade, made the same on every CPU.

numpy's own documentation warns that results may differ across CPUs and BLAS builds: OpenBLAS
picks a kernel per processor (AVX-512 on a Sapphire Rapids Xeon, AVX2 on an EPYC), and a kernel
sums in its own order, so a float32 dot product, or a logistic regression stopped at a tolerance,
comes out a few last bits apart. Where such a value is then compared (a rank, a probability
against a threshold), those bits can move a grade, and a grade moves a study's numbers
(docs/study.md, "Which numbers reproduce where"). Three rules, each used where such a value is made:

- inner products of embeddings are summed in float64 (:func:`inner_products`): float32 inputs
  multiply exactly in float64 and the sum's rounding error, ~1e-16, no longer depends on the order;
- a value that is compared is put on a fixed grid first (:func:`on_grid`, :data:`GRID`, 2**-20,
  about 1e-6, far above what is left of the arithmetic's noise), ties then broken by id;
- a model fitted by an optimiser is fitted to convergence (:func:`fit_logistic`: Newton's method
  to a gradient of 1e-10), not to a loose tolerance where the iterate's path, and so the CPU,
  decides where it stops.

What a machine is made of, as a study's manifest records it, is `recall_kit.machine`.

A grid cannot promise equality: two machines whose inputs differ (say embeddings a last bit apart)
may still put a value on either side of a grid point. It makes such a move rare and, with the first
two rules, needs the inputs themselves to differ; docs/study.md gives what was measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: The grid a deciding value is put on: 2**-20 (9.5e-7). A binary step keeps a value on the grid
#: exact in float32 within [-2**3, 2**3] too, so the float32 tie keys of `sort_hits` see the same ties.
GRID = 2.0 ** -20


def on_grid(values: Any, grid: float = GRID) -> Any:
    """`values` (a float or an array) rounded to the nearest multiple of `grid`, half to even."""
    import numpy as np

    if isinstance(values, float | int):
        return round(float(values) / grid) * grid
    return np.round(np.asarray(values, dtype=np.float64) / grid) * grid


def inner_products(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ right.T`` summed in float64 and put on the grid: the same on every CPU whenever
    the inputs are (float32 products are exact in float64, and float64 summation's error is far
    below the grid)."""
    import numpy as np

    return on_grid(np.asarray(left, dtype=np.float64) @ np.asarray(right, dtype=np.float64).T)


def paired_inner_products(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The inner product of each row of `left` with the same row of `right`, as :func:`inner_products`."""
    import numpy as np

    return on_grid(np.einsum("ij,ij->i", np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)))


def fit_logistic(rows: np.ndarray, truth: np.ndarray) -> Any:
    """A standard-scaled, L2-regularised (C=1) logistic regression fitted to convergence:
    scikit-learn's Newton-Cholesky solver to a gradient of 1e-10, where the loss's unique minimum
    is reached whatever order the arithmetic ran in."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(solver="newton-cholesky", tol=1e-10, max_iter=200))
    return model.fit(rows, truth)


def probabilities(model: Any, rows: np.ndarray) -> np.ndarray:
    """`model`'s probability of the positive class for each row, on the grid."""
    return on_grid(model.predict_proba(rows)[:, 1])
