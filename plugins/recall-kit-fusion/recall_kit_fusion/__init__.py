"""recall-kit-fusion: fusion strategies (rrf, convex, exact-bonus, importance) for recall-kit."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import recall_kit
from recall_kit.plugin import lazy_attributes

if TYPE_CHECKING:
    from recall_kit_fusion.convex import ConvexFusion
    from recall_kit_fusion.exact_bonus import ExactBonus
    from recall_kit_fusion.importance import ImportanceBlend
    from recall_kit_fusion.rrf import ReciprocalRankFusion

__all__ = ["ConvexFusion", "ExactBonus", "ImportanceBlend", "ReciprocalRankFusion", "register_fusions"]

# The public names, imported on first use: the host imports this module for every command,
# `recall-kit --help` included, and calls the hook only when it needs the fusions.
_LAZY = {
    "ConvexFusion": "recall_kit_fusion.convex",
    "ExactBonus": "recall_kit_fusion.exact_bonus",
    "ImportanceBlend": "recall_kit_fusion.importance",
    "ReciprocalRankFusion": "recall_kit_fusion.rrf",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


@recall_kit.hookimpl
def register_fusions(register: Callable[[str, type[recall_kit.Fusion]], None]) -> None:
    """Register `rrf`, `convex`, `exact-bonus` and `importance`."""
    from recall_kit_fusion.convex import ConvexFusion
    from recall_kit_fusion.exact_bonus import ExactBonus
    from recall_kit_fusion.importance import ImportanceBlend
    from recall_kit_fusion.rrf import ReciprocalRankFusion

    register("rrf", ReciprocalRankFusion)
    register("convex", ConvexFusion)
    register("exact-bonus", ExactBonus)
    register("importance", ImportanceBlend)
