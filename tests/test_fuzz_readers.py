"""Every reader's fuzz target (tests/fuzz/targets.py), briefly and from a fixed seed: the kept
findings of the long runs and a few fresh cases each. `make fuzz` runs each for a minute."""

from __future__ import annotations

import pytest
from fuzz.harness import Case, Target  # tests/ is on sys.path (conftest.py)
from fuzz.targets import targets

#: Fresh cases per target in the suite (the suite's time is tight; `make fuzz` runs thousands).
EXAMPLES = 8
TARGETS = targets()


@pytest.mark.parametrize("target", TARGETS, ids=[target.name for target in TARGETS])
def test_each_reader_reads_a_valid_input_as_its_reference_and_refuses_the_rest_in_one_line(target: Target) -> None:
    target.property(EXAMPLES, derandomize=True)()


def test_the_harness_catches_a_reader_that_breaks_the_contract() -> None:
    """A reader that raises something else, or misreads a valid input, fails the target."""
    from hypothesis import strategies as st

    def broken(root):  # noqa: ANN001, ANN202
        return int((root / "x").read_bytes() or b"0")  # ValueError on anything but digits

    valid = st.just(Case((("x", b"7"),), 8, True))  # misread: 7 is not 8
    target = Target("broken", "a broken reader", valid, broken, ["x"])
    with pytest.raises(AssertionError, match="reference reading"):
        target.check(Case((("x", b"7"),), 8, True))
    with pytest.raises(ValueError):
        target.check(Case((("x", b"x"),)))
