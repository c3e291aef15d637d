"""Whether result documents can be compared at all: one dataset, one query set, scored alike. The
paired comparison itself is decide/compare.py's; pool (curate/) asks the same of its runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from recall_kit.errors import ResultFileError

if TYPE_CHECKING:
    from recall_kit.measure.result import BenchmarkResult


def check_comparable(named: Sequence[tuple[str, BenchmarkResult]]) -> list[str]:
    """Refuse results of different datasets or query sets; return the shared query ids in order."""
    if len(named) < 2:
        raise ResultFileError("Compare needs at least two result files.")
    base_label, base = named[0]
    base_fp = str(base.fingerprint)
    base_ids = base.query_ids
    for label, result in named[1:]:
        fp = str(result.fingerprint)
        if fp != base_fp:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were run on different datasets (fingerprints "
                f"{fp[:12]} and {base_fp[:12]}); compare results of one dataset."
            )
        ids = set(result.query_ids)
        if ids != set(base_ids):
            only_here, only_base = len(ids - set(base_ids)), len(set(base_ids) - ids)
            raise ResultFileError(
                f"{label!r} and {base_label!r} hold different query sets ({only_here} queries only in "
                f"the first, {only_base} only in the second); compare results of one query set."
            )
    return base_ids


def check_scored_alike(named: Sequence[tuple[str, BenchmarkResult]]) -> None:
    """Refuse results scored with different relevance levels (trec_eval ``-l``) or judged-only
    settings (``-J``): their per-query values measure different things, so no delta between them
    says anything about the systems."""
    base_label, base = named[0]
    for label, result in named[1:]:
        if result.relevance_level != base.relevance_level:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were scored with different relevance levels (-l "
                f"{result.relevance_level} and -l {base.relevance_level}); compare results scored alike "
                "(re-run eval with one -l)."
            )
        if result.judged_only != base.judged_only:
            scored, other = (label, base_label) if result.judged_only else (base_label, label)
            raise ResultFileError(
                f"{scored!r} was scored judged-only (-J) and {other!r} was not; compare results scored "
                "alike (re-run eval with or without -J for both)."
            )
