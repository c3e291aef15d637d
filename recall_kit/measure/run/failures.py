"""The failed-query policy: a query whose search failed on a live system is not a miss.

A `FailedSearch` (a server that crashed, hung, closed mid-answer or answered garbage) scored as an
empty ranking would pass a broken system off as a bad one. By default any failed query ends the
run with no result; `--max-failed N` (a count, or a share such as `5%`) accepts up to N, and the
result then records which queries failed on which leg, so `compare` and `gate` can refuse it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recall_kit.errors import FailedQueriesError, OptionError

if TYPE_CHECKING:
    from recall_kit.measure.run.runs import LegRun
    from recall_kit.types import Query

#: How many failed queries an error names before it says "and N more".
NAMED = 3


@dataclass(frozen=True)
class MaxFailed:
    """How many failed queries a run accepts: `count` of them, or a `share` of the queries."""

    count: int = 0
    share: float | None = None

    def allowed(self, queries: int) -> int:
        """The most failed queries accepted out of `queries`."""
        if self.share is not None:
            return math.floor(self.share * queries + 1e-9)
        return self.count

    def __str__(self) -> str:
        return f"{self.share * 100:g}%" if self.share is not None else str(self.count)


def parse_max_failed(text: MaxFailed | int | str | None) -> MaxFailed:
    """`--max-failed`: a count (`3`) or a share of the queries (`5%`); empty or None: none."""
    if isinstance(text, MaxFailed):
        return text
    if text is None or not str(text).strip():
        return MaxFailed()
    value = str(text).strip()
    try:
        if value.endswith("%"):
            share = float(value[:-1]) / 100.0
            if not math.isfinite(share) or not 0.0 <= share <= 1.0:
                raise ValueError
            return MaxFailed(share=share)
        count = int(value)
        if count < 0:
            raise ValueError
        return MaxFailed(count=count)
    except ValueError:
        raise OptionError(f"--max-failed {value!r} is not a count (3) or a share of the queries (5%).") from None


def failed_by_leg(leg_runs: Mapping[str, LegRun], queries: Sequence[Query]) -> dict[str, dict[str, str]]:
    """Leg -> {query id: reason} for every query whose search failed, in query order."""
    return {name: {queries[index].query_id: reason for index, reason in sorted(run.failures.items())}
            for name, run in leg_runs.items() if run.failures}


def check_failed_queries(
    leg_runs: Mapping[str, LegRun], queries: Sequence[Query], max_failed: MaxFailed | int | str | None = None,
) -> dict[str, dict[str, str]]:
    """The failed queries per leg (`failed_by_leg`), or `FailedQueriesError` when more queries
    failed (on any leg) than `max_failed` accepts (a count, a share such as "5%"; default: none)."""
    failed = failed_by_leg(leg_runs, queries)
    policy = parse_max_failed(max_failed)
    distinct = {query_id for per_leg in failed.values() for query_id in per_leg}
    allowed = policy.allowed(len(queries))
    if len(distinct) <= allowed:
        return failed
    legs = []
    for name, per_leg in failed.items():
        named = [f"{query_id}: {reason}" for query_id, reason in list(per_leg.items())[:NAMED]]
        more = len(per_leg) - NAMED
        legs.append(f"Leg {name!r} failed on {len(per_leg)} of {len(queries)} queries ("
                    + "; ".join(named) + (f"; and {more} more" if more > 0 else "") + ")")
    accepted = f"--max-failed {policy} accepts {allowed}" if allowed else "none is accepted by default"
    raise FailedQueriesError(
        f"{'; '.join(legs)}. A failed query is not a miss, so no result was "
        f"written ({len(distinct)} failed, {accepted}): fix the system, or accept some with --max-failed N "
        "(a count, or a share such as 5%)."
    )


def refuse_failed_results(named: Sequence[tuple[str, object]]) -> None:
    """`FailedQueriesError` when any result (label, BenchmarkResult) holds failed queries: their
    empty rankings are a system's outage, not its quality, and a paired comparison would read
    them as losses (or, on the baseline's side, as wins)."""
    for label, result in named:
        failed = getattr(result, "failed_queries", None) or {}
        count = len({query_id for per_leg in failed.values() for query_id in per_leg})
        if count:
            legs = ", ".join(sorted(failed))
            raise FailedQueriesError(
                f"{label}: {count} quer{'y' if count == 1 else 'ies'} failed on leg{'s' if len(failed) > 1 else ''} "
                f"{legs} (accepted with --max-failed): a failed query is not a miss, so this result is not "
                "compared; rerun it until no query fails."
            )


def failed_queries_warning(named: Sequence[tuple[str, object]]) -> str | None:
    """One warning naming each result that holds failed queries (ablate and sweep compare their
    variants anyway, the user having accepted the failures for this run)."""
    parts = []
    for label, result in named:
        failed = getattr(result, "failed_queries", None) or {}
        count = len({query_id for per_leg in failed.values() for query_id in per_leg})
        if count:
            parts.append(f"{label} ({count})")
    if not parts:
        return None
    return ("FAILED QUERIES: " + ", ".join(parts) + " scored failed queries as empty rankings (accepted with "
            "--max-failed); a failed query is not a miss, so read these deltas as a lower bound of the system.")
