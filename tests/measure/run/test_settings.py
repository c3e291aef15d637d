"""ScoringSettings: the one value eval of several systems, ablate and sweep score with."""

from __future__ import annotations

import pytest

from recall_kit.errors import OptionError
from recall_kit.measure.run.settings import ScoringSettings


def test_settings_carry_every_scoring_argument_of_run_system():
    import inspect

    from recall_kit.measure.run.runner import run_system

    settings = ScoringSettings.of(k=5, metrics=["mrr"], relevance_level=2, judged_only=True, latency_sample=0, seed=3)
    assert settings.scoring() == {"k": 5, "metrics": ["mrr"], "seed": 3, "relevance_level": 2, "judged_only": True,
                                  "max_failed": None}
    # Every keyword run_system scores with is in the settings: a new one cannot be dropped silently.
    parameters = set(inspect.signature(run_system).parameters)
    assert set(settings.scoring()) <= parameters
    handed_elsewhere = {"system", "dataset", "depth", "leg_runs", "show_progress", "latency_sample"}
    assert parameters - handed_elsewhere == set(settings.scoring())


def test_a_bad_relevance_level_is_refused_before_anything_runs():
    with pytest.raises(OptionError, match="relevance level must be a whole number >= 1"):
        ScoringSettings.of(relevance_level=0)
    assert ScoringSettings.of(metrics=None).scoring()["metrics"] is None
