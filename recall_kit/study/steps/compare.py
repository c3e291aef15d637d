"""The compare step: the head-to-head, `recall-kit compare` of every candidate against the baseline on
the decision metrics, per stratum too, one Holm family (`CompareReads` and the comparison itself are
shared with the simpler step: steps/common.py)."""

from __future__ import annotations

from recall_kit.study.steps.common import (
                CompareReads,
                StepRule,
                compare_command,
                compare_reads,
                eval_steps,
                make_compare,
)

RULE = StepRule("compare", CompareReads, lambda at, _: compare_reads(at.config), make_compare, needs=eval_steps,
                reproduce=compare_command)
