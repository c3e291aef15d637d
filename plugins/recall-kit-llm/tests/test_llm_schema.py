"""Every answer checked against its prompt's JSON schema: a grade of 100 is not a grade, whatever
the model (or its grammar) let through; an answer off the schema is asked again and counted."""

from __future__ import annotations

from recall_kit_llm.judge import GRADE_SCHEMA
from recall_kit_llm.models import CallCache, JsonAsker
from recall_kit_llm.schema import schema_violation


def test_schema_violations_name_the_value_at_fault():
    assert schema_violation({"grade": 2, "reason": "x"}, GRADE_SCHEMA) is None
    assert schema_violation({"grade": 100}, GRADE_SCHEMA) == "answer.grade: 100 breaks its maximum 3"
    assert schema_violation({"grade": -1}, GRADE_SCHEMA) == "answer.grade: -1 breaks its minimum 0"
    assert schema_violation({"grade": True}, GRADE_SCHEMA) == "answer.grade: bool where the schema wants integer"
    assert schema_violation({"grade": 2.0}, GRADE_SCHEMA) == "answer.grade: float where the schema wants integer"
    assert schema_violation({"reason": "x"}, GRADE_SCHEMA) == "answer: lacks the required 'grade'"
    relations = {"type": "object", "required": ["relations"], "properties": {"relations": {
        "type": "array", "maxItems": 2,
        "items": {"type": "object", "required": ["relation"], "properties": {"relation": {"enum": ["with", "uses"]}}}}}}
    assert schema_violation({"relations": [{"relation": "with"}]}, relations) is None
    assert schema_violation({"relations": [{"relation": "likes"}]}, relations) == (
        "answer.relations[0].relation: not one of the 2 allowed values")
    assert schema_violation({"relations": [{"relation": "with"}] * 3}, relations) == (
        "answer.relations: more items than its maxItems 2")
    closed = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "additionalProperties": False}
    assert schema_violation({"a": "abcd"}, closed) == "answer.a: longer than its maxLength 3"
    assert schema_violation({"b": 1}, closed) == "answer: has 'b', which the schema does not allow"


def test_an_off_schema_answer_is_refused_asked_again_and_counted(llm_home, scripted_model, tmp_path):
    import llm

    asker = JsonAsker(llm.get_model("recall-test"), "v1", CallCache(tmp_path / "c"), retries=0, retry_wait=0, tries=2)
    # The scripted judge answers {"grade": 100} to a question holding GRADE-100, at the first attempt.
    prompt = "QUESTION:\nGRADE-100 where\n\nMEMORY:\nsomething where\n\nGrade the memory."
    accepted = asker.ask("You judge memories.", prompt, GRADE_SCHEMA, lambda answer: answer)  # accepts anything
    assert accepted == {"grade": 1, "reason": "shared words"}
    assert asker.stats.extra["off_schema"] == 1 and asker.stats.malformed == 1 and scripted_model.calls == 2
