"""Qrels and runs given as Python mappings (pytrec_eval's shapes) read as recall-kit reads TREC
files: ids as strings, grades as integers, a run's scores ranked in trec_eval's order."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from recall_kit.types import Hit, Qrels, sort_hits


def as_qrels(qrels: Mapping[Any, Any]) -> Qrels:
    """``{query_id: {doc_id: grade}}`` or ``{query_id: [relevant ids]}`` as `Qrels`; a grade that is
    not a whole number, or a query's judgments of another shape, raise ValueError naming them."""
    out: Qrels = {}
    for query_id, judged in qrels.items():
        if isinstance(judged, Mapping):
            grades = {}
            for doc, grade in judged.items():
                # A string must be ASCII digits: float() reads "1_0" as 10 and "١" as 1.
                if isinstance(grade, str) and not re.fullmatch(r"[+-]?[0-9]+(?:\.0*)?", grade.strip()):
                    raise ValueError(f"qrels of query {query_id!r}: grade {grade!r} of {doc!r} is not an integer")
                if isinstance(grade, bool) or not float(grade).is_integer():
                    raise ValueError(f"qrels of query {query_id!r}: grade {grade!r} of {doc!r} is not an integer")
                grades[str(doc)] = int(grade)
            out[str(query_id)] = grades
        elif isinstance(judged, (str, bytes)) or not isinstance(judged, Iterable):
            raise ValueError(
                f"qrels of query {query_id!r}: expected {{doc_id: grade}} or a list of relevant ids"
            )
        else:
            out[str(query_id)] = {str(doc): 1 for doc in judged}
    return out


def score_value(query_id: Any, doc: Any, score: Any) -> float:
    """A run score given in Python; a string is read as trec_eval reads a run file's (see
    `recall_kit.measure.score.trec.parse_score`), so "1_0" is refused rather than read as 10."""
    if isinstance(score, str):
        from recall_kit.measure.score.trec import parse_score

        parsed = parse_score(score.strip())
        if parsed is None:
            raise ValueError(f"run of query {query_id!r}: score {score!r} of {doc!r} is not a number")
        return parsed
    return float(score)


def as_rankings(run: Mapping[Any, Any], ties: str) -> dict[str, list[str]]:
    """Each query's ranked ids from ``{doc_id: score}`` (put in trec_eval's order at `ties`
    precision) or ``[doc_id, ...]`` (ranked already); another shape or a NaN score raises ValueError."""
    rankings: dict[str, list[str]] = {}
    for query_id, answer in run.items():
        if isinstance(answer, Mapping):
            hits = [Hit(str(doc), score_value(query_id, doc, score)) for doc, score in answer.items()]
            if any(math.isnan(hit.score) for hit in hits):
                raise ValueError(f"run of query {query_id!r}: a score is NaN")
            rankings[str(query_id)] = [hit.id for hit in sort_hits(hits, ties)]
        elif isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
            raise ValueError(
                f"run of query {query_id!r}: expected {{doc_id: score}} or a list of ids, best first"
            )
        else:
            rankings[str(query_id)] = [str(doc) for doc in answer]
    return rankings
