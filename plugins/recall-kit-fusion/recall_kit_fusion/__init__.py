"""recall-kit-fusion: fusion strategies (rrf, convex, exact-bonus, importance) for recall-kit."""

from __future__ import annotations

from collections.abc import Callable

import recall_kit
from recall_kit_fusion.convex import ConvexFusion
from recall_kit_fusion.exact_bonus import ExactBonus
from recall_kit_fusion.importance import ImportanceBlend
from recall_kit_fusion.rrf import ReciprocalRankFusion

__all__ = ["ConvexFusion", "ExactBonus", "ImportanceBlend", "ReciprocalRankFusion", "register_fusions"]


@recall_kit.hookimpl
def register_fusions(register: Callable[[str, type[recall_kit.Fusion]], None]) -> None:
    """Register `rrf`, `convex`, `exact-bonus` and `importance`."""
    register("rrf", ReciprocalRankFusion)
    register("convex", ConvexFusion)
    register("exact-bonus", ExactBonus)
    register("importance", ImportanceBlend)
