"""The simpler step (the compare-down): the best candidate against every other candidate but the
baseline, overall, one Holm family of its own; the recommendation's order of simplicity reads it."""

from __future__ import annotations

from recall_kit.study.steps.common import (
                CompareReads,
                StepRule,
                compare_command,
                eval_steps,
                make_compare,
                simpler_reads,
)

RULE = StepRule("simpler", CompareReads, lambda at, artefacts: simpler_reads(at.config, artefacts), make_compare,
                needs=eval_steps, reproduce=compare_command)
