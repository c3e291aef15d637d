"""The study result's reader (recall_kit.study.result): study.json read back into the same dataclasses,
and strict: a key no field declares, or a required one missing, is one error naming the file and the
key (as `DocumentReader` is for result.json), never silently dropped."""

from __future__ import annotations

import copy
import json

import pytest
from study.test_threats import clean_study  # tests/ is on sys.path (conftest.py)

from recall_kit.document_reader import from_json
from recall_kit.errors import ResultFileError
from recall_kit.study.result import (
    HoleIntervals,
    KappaAgainst,
    KappaBetween,
    PeopleSummary,
    StudyResult,
)


def _saved(study: StudyResult) -> dict[str, object]:
    return json.loads(json.dumps(study.to_dict()))  # type: ignore[no-any-return]


def test_study_json_reads_back_into_the_same_result_people_included() -> None:
    study = copy.deepcopy(clean_study())
    study.people = PeopleSummary(assessors={"alice": 4, "bob": 3}, added=5,
                                 between=[KappaBetween("alice", "bob", None, 3, None, 3, "one side grades alike")],
                                 against_qrels=[KappaAgainst("alice", 0.5, 4, [0.1, 0.9], 3)])
    data = _saved(study)
    assert StudyResult.from_dict(data) == study
    people = data["people"]
    assert isinstance(people, dict)
    # A kappa row's `why` is written only where kappa is undefined (study.json as before the dataclasses).
    assert "why" in people["between"][0] and "why" not in people["against_qrels"][0]
    assert list(people["against_qrels"][0]) == ["assessor", "kappa", "n", "interval", "agreed"]


def test_an_unknown_key_is_one_error_naming_the_file_and_the_key() -> None:
    data = _saved(clean_study())
    data["corpus"]["memoriez"] = 3  # type: ignore[index]
    with pytest.raises(ResultFileError, match=r"^out/study\.json: unknown key StudyResult\.corpus\.memoriez; "):
        StudyResult.from_dict(data, "out/study.json")
    data = _saved(clean_study())
    data["strata"][0]["extra"] = 1  # type: ignore[index]
    with pytest.raises(ResultFileError, match=r"unknown key StudyResult\.strata\[0\]\.extra"):
        StudyResult.from_dict(data)


def test_a_missing_required_key_is_named_and_a_missing_optional_one_takes_its_default() -> None:
    data = _saved(clean_study())
    del data["baseline"]
    with pytest.raises(ResultFileError, match=r"missing StudyResult\.baseline"):
        StudyResult.from_dict(data)
    data = _saved(clean_study())
    del data["timings"]
    assert StudyResult.from_dict(data).timings == {}


def test_the_intervals_file_reads_without_its_pairs_or_a_challenger() -> None:
    empty = {"sample": [], "pairs": [], "predictor": "holes not relevant", "rows": []}
    found = HoleIntervals.from_dict(empty, "intervals.json")
    assert found.challenger is None and found.rows == []
    with pytest.raises(ResultFileError, match="intervals.json: unknown key HoleIntervals.rowz"):
        HoleIntervals.from_dict({**empty, "rowz": []}, "intervals.json")


def test_from_json_builds_nested_dataclasses() -> None:
    row = from_json(KappaAgainst, {"assessor": "bob", "kappa": 0.25, "n": 8, "interval": [0.0, 0.5], "agreed": 6},
                    "agreement.json", "recall-kit/study/2")
    assert row == KappaAgainst("bob", 0.25, 8, [0.0, 0.5], 6, None)
    with pytest.raises(ResultFileError, match=r"^agreement\.json: missing KappaAgainst\.n; not a valid x/1 document\.$"):
        from_json(KappaAgainst, {"assessor": "bob", "kappa": 0.25, "interval": [0.0, 0.5]}, "agreement.json", "x/1")
