"""A leg as distributed work sees it: the key that decides its run, its name as a person reads it,
and whether it asks for a GPU. Shared by the leg searches (distribute.py) and the batch embedding
before them (batch_embedding.py)."""

from __future__ import annotations

import json

from recall_kit.measure.system import Leg
from recall_kit.options import options_to_dict


def leg_key(leg: Leg) -> str:
    """What decides a leg's run: its name, options and context options."""
    return json.dumps([leg.name, options_to_dict(leg.options), options_to_dict(leg.context)],
                      sort_keys=True, default=str)


def describe_leg(leg: Leg) -> str:
    """A leg and its options as a person reads them in an error: `bm25 (k1=0.9, b=0.4)`."""
    options = options_to_dict(leg.options) or {}
    listed = ", ".join(f"{name}={value}" for name, value in options.items())
    return f"{leg.name} ({listed})" if listed else leg.name


def gpus_for(leg: Leg) -> float:
    """A leg whose options put it on an accelerator (`device=cuda`, `cuda:N` or `auto`, as the dense
    leg's) asks for one GPU; the executor asks for it only where the cluster has one."""
    device = str(getattr(leg.options, "device", "cpu") or "cpu")
    return 1.0 if device.startswith(("cuda", "auto")) else 0.0


__all__ = ["describe_leg", "gpus_for", "leg_key"]
