"""Helpers the metric modules share: cutting rankings at k and safe division."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.types import JudgedRankings

if TYPE_CHECKING:  # numpy is imported by the functions: registering the metrics imports these modules
    import numpy as np


def relevant_at(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """(Q, min(cutoff, D)) True where the document at that rank is relevant (grade >= the
    relevance level, 1 unless trec_eval's ``-l`` says otherwise)."""
    grades = data.grades if cutoff is None else data.grades[:, :cutoff]
    return grades >= data.relevance_level


def relevant_retrieved(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """(Q,) how many relevant documents stand in the top `cutoff` (the whole ranking for None)."""
    import numpy as np

    return np.count_nonzero(relevant_at(data, cutoff), axis=1).astype(np.float64)


def divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator as float64, 0 where the denominator is 0 (no relevant documents)."""
    import numpy as np

    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def check_cutoff(cutoff: int | None, *, required: bool) -> None:
    """Reject a missing required cutoff or a cutoff below 1 (a library caller's mistake)."""
    import numpy as np

    if cutoff is None:
        if required:
            raise ValueError("this metric needs a cutoff k >= 1")
        return
    if isinstance(cutoff, bool) or not isinstance(cutoff, (int, np.integer)) or cutoff < 1:
        raise ValueError(f"cutoff must be an integer >= 1, got {cutoff!r}")


def require_cutoff(cutoff: int | None) -> int:
    """The cutoff of a metric that needs one, checked (see `check_cutoff`)."""
    check_cutoff(cutoff, required=True)
    return int(cutoff)  # type: ignore[arg-type]  # not None: checked above


def refuse_cutoff(name: str, cutoff: int | None) -> None:
    """Reject a cutoff given to a metric that takes none (a library caller's mistake)."""
    if cutoff is not None:
        raise ValueError(f"{name} takes no cutoff")


def exclusive_cumsum(flags: np.ndarray) -> np.ndarray:
    """(Q, D) how many True cells stand strictly before each rank of each row."""
    import numpy as np

    counts = np.cumsum(flags, axis=1, dtype=np.int64)
    return counts - flags
