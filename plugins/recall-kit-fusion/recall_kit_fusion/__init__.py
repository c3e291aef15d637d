"""recall-kit-fusion: fusion strategies (rrf, convex and the Comb* family, Borda, ISR, exact-bonus,
importance) for recall-kit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_fusion.borda import BordaFuse
    from recall_kit_fusion.combanz import CombAnz
    from recall_kit_fusion.combmax import CombMax
    from recall_kit_fusion.combmin import CombMin
    from recall_kit_fusion.combmnz import CombMnz
    from recall_kit_fusion.combsum import CombSum
    from recall_kit_fusion.convex import ConvexFusion
    from recall_kit_fusion.exact_bonus import ExactBonus
    from recall_kit_fusion.importance import ImportanceBlend
    from recall_kit_fusion.isr import InverseSquareRank
    from recall_kit_fusion.log_isr import LogInverseSquareRank
    from recall_kit_fusion.rescore import LeadRescore
    from recall_kit_fusion.rrf import ReciprocalRankFusion
    from recall_kit_fusion.wsum import WeightedSum

__all__ = ["BordaFuse", "CombAnz", "CombMax", "CombMin", "CombMnz", "CombSum", "ConvexFusion", "ExactBonus",
           "ImportanceBlend", "InverseSquareRank", "LeadRescore", "LogInverseSquareRank", "ReciprocalRankFusion", "WeightedSum",
           "register_fusions"]

# The public names, imported on first use: the host imports this module for every command,
# `recall-kit --help` included, and calls the hook only when it needs the fusions.
_LAZY = {
    "BordaFuse": "recall_kit_fusion.borda",
    "CombAnz": "recall_kit_fusion.combanz",
    "CombMax": "recall_kit_fusion.combmax",
    "CombMin": "recall_kit_fusion.combmin",
    "CombMnz": "recall_kit_fusion.combmnz",
    "CombSum": "recall_kit_fusion.combsum",
    "InverseSquareRank": "recall_kit_fusion.isr",
    "LogInverseSquareRank": "recall_kit_fusion.log_isr",
    "LeadRescore": "recall_kit_fusion.rescore",
    "WeightedSum": "recall_kit_fusion.wsum",
    "ConvexFusion": "recall_kit_fusion.convex",
    "ExactBonus": "recall_kit_fusion.exact_bonus",
    "ImportanceBlend": "recall_kit_fusion.importance",
    "ReciprocalRankFusion": "recall_kit_fusion.rrf",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def register_fusions(register: Register) -> None:
    """Register `rrf`, `convex` (and `wsum`), `combsum`, `combmnz`, `combmax`, `combmin`, `combanz`,
    `borda`, `isr`, `log-isr`, `rescore`, `exact-bonus` and `importance`."""
    from recall_kit_fusion.borda import BordaFuse
    from recall_kit_fusion.combanz import CombAnz
    from recall_kit_fusion.combmax import CombMax
    from recall_kit_fusion.combmin import CombMin
    from recall_kit_fusion.combmnz import CombMnz
    from recall_kit_fusion.combsum import CombSum
    from recall_kit_fusion.convex import ConvexFusion
    from recall_kit_fusion.exact_bonus import ExactBonus
    from recall_kit_fusion.importance import ImportanceBlend
    from recall_kit_fusion.isr import InverseSquareRank
    from recall_kit_fusion.log_isr import LogInverseSquareRank
    from recall_kit_fusion.rescore import LeadRescore
    from recall_kit_fusion.rrf import ReciprocalRankFusion
    from recall_kit_fusion.wsum import WeightedSum

    register("rrf", ReciprocalRankFusion)
    register("convex", ConvexFusion)
    register("exact-bonus", ExactBonus)
    register("importance", ImportanceBlend)
    register("wsum", WeightedSum)
    register("combsum", CombSum)
    register("combmnz", CombMnz)
    register("combmax", CombMax)
    register("combmin", CombMin)
    register("combanz", CombAnz)
    register("borda", BordaFuse)
    register("isr", InverseSquareRank)
    register("log-isr", LogInverseSquareRank)
    register("rescore", LeadRescore)
