"""recall-kit-my-plugin: the `my-plugin` metric for recall-kit (`my-plugin@10`)."""

from __future__ import annotations


import numpy as np
from recall_kit.plugin import JudgedRankings, Metric, Register, hookimpl


def my_plugin_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Per query, the number of relevant documents (grade >= 1) in the top `cutoff`."""
    if cutoff is None or cutoff < 1:
        raise ValueError("my-plugin needs a cutoff >= 1, e.g. my-plugin@10")
    return data.relevant[:, :cutoff].sum(axis=1).astype(np.float64)


METRIC = Metric(
    name="my-plugin",
    compute=my_plugin_at_k,
    cutoff="required",
    description="number of relevant documents in the top k",
)


@hookimpl
def register_metrics(register: Register) -> None:
    """Register the `my-plugin` metric family."""
    register("my-plugin", METRIC)
