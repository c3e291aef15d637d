"""The leg-contribution warning: a leg whose own finds never reach the fused top k is named; two
identical legs (or one returning a subset of another's) get a warning that applies to them."""

from __future__ import annotations

from recall_kit.measure.run.diagnostics import _attribution


def test_two_identical_legs_get_no_warning_that_blames_the_fusion():
    found = [{"a": {"x": 1, "y": 1}, "b": {"x": 2, "y": 2}}]
    _, warnings = _attribution(["x", "y"], found, [["a", "b"]], [{"a"}], {}, 2)
    assert all("check its weight and the fusion settings" not in warning for warning in warnings)
    assert warnings == [
        "Leg 'x' found no document in its own top 2 that another leg did not also find in theirs: it adds no "
        "document of its own here, whatever the fusion.",
        "Leg 'y' found no document in its own top 2 that another leg did not also find in theirs: it adds no "
        "document of its own here, whatever the fusion."]


def test_a_leg_whose_own_finds_are_pushed_out_of_the_fused_top_k_is_named():
    # y alone found c (its rank 1), but the fused top 2 is a, b, both x's.
    found = [{"a": {"x": 1}, "b": {"x": 2}, "c": {"y": 1}}]
    table, warnings = _attribution(["x", "y"], found, [["a", "b", "c"]], [{"c"}], {}, 2)
    assert table["y"].relevant_pushed_out == 1
    assert warnings == ["Leg 'y' never placed a document that only it found (in its own top 2) in any fused top 2: "
                        "check its weight and the fusion settings before concluding it adds nothing."]
