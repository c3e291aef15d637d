"""The built-in metrics, registered through the same hook as any plugin's.

Each metric, its function and its metadata (name, aliases, bounds, description) live together in
`recall_kit/measure/score/metrics/<name>.py`; this module only registers them.
"""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl


@hookimpl
def register_metrics(register: Register) -> None:
    """Register every built-in metric (`recall_kit.measure.score.metrics.builtin_metrics`)."""
    from recall_kit.measure.score.metrics import builtin_metrics

    for metric in builtin_metrics():
        register(metric.name, metric)
