"""How one command scores every system it runs: the depth scored, the metrics, trec_eval's `-l` and
`-J`, how many queries are timed, the seed. One value, built once by `eval` of several systems,
`ablate` and `sweep` and handed down, so no caller can drop one of them on the way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recall_kit.measure.run.failures import MaxFailed, parse_max_failed
from recall_kit.measure.score.join import check_relevance_level


@dataclass(frozen=True)
class ScoringSettings:
    """The settings every system of one run is scored with (`run_system`'s scoring arguments).

    `k` is the depth scored (metrics past it raise it, as `run_benchmark` does); `metrics` None
    means the default set; `relevance_level` and `judged_only` are trec_eval's ``-l`` and ``-J``;
    `latency_sample` queries are timed one at a time (None: all; 0: none); `seed` goes into the
    manifest; `max_failed` is how many failed queries a result may hold (default none: a failed
    query ends the run, `--max-failed`)."""

    k: int = 20
    metrics: tuple[str, ...] | None = None
    relevance_level: int = 1
    judged_only: bool = False
    latency_sample: int | None = 200
    seed: int = 0
    max_failed: MaxFailed | None = None

    @classmethod
    def of(cls, k: int = 20, metrics: Sequence[str] | None = None, relevance_level: int = 1,
           judged_only: bool = False, latency_sample: int | None = 200, seed: int = 0,
           max_failed: MaxFailed | int | str | None = None) -> ScoringSettings:
        """The settings from a command's loose arguments, `relevance_level` and `max_failed` checked
        (a bad one is refused before anything runs)."""
        return cls(k=k, metrics=None if metrics is None else tuple(metrics),
                   relevance_level=check_relevance_level(relevance_level), judged_only=bool(judged_only),
                   latency_sample=latency_sample, seed=seed,
                   max_failed=None if max_failed is None else parse_max_failed(max_failed))

    def scoring(self) -> dict[str, Any]:
        """`run_system`'s keyword arguments for scoring (the search's `latency_sample` apart)."""
        return {"k": self.k, "metrics": None if self.metrics is None else list(self.metrics), "seed": self.seed,
                "relevance_level": self.relevance_level, "judged_only": self.judged_only,
                "max_failed": self.max_failed}


__all__ = ["ScoringSettings"]
