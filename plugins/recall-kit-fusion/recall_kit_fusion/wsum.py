"""Weighted sum of normalised scores, under ranx's name (`wsum`): the convex fusion."""

from __future__ import annotations

from recall_kit_fusion.convex import ConvexFusion


class WeightedSum(ConvexFusion):
    r"""Weighted sum, ``ranx.fuse(method="wsum")``: :math:`\sum_L w_L \, \mathrm{norm}_L(s_L(d))`.

    The same fusion as `convex` (Bruch, Gai & Ingber, ACM TOIS 2023; Fox & Shaw 1993 for the
    unweighted CombSUM), registered under the name ranx users look for; see `ConvexFusion` for
    the normalisations, floors and `diagnose`.
    """

    description = "weighted sum of normalised scores (ranx's wsum; the same as convex)"
