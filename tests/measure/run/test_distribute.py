"""measure/run/distribute.py: what decides a leg's run, its name in messages, the GPU it asks for."""

from __future__ import annotations

import pytest

from recall_kit.measure.run.distribute import describe_leg, gpus_for, leg_key
from recall_kit.measure.systems.system import SystemSpec, build_system


@pytest.fixture(autouse=True)
def _overlap(overlap_plugin):
    """The `overlap` retriever (tests/helpers.py) is the leg here."""


def _leg(options: dict[str, str]):
    return build_system(SystemSpec("overlap", options={"overlap": options})).legs[0]


def test_the_key_follows_the_options_and_the_context():
    plain, tuned = _leg({}), _leg({"boost": "0.5"})
    assert leg_key(plain) == leg_key(_leg({}))  # the same configuration: one search
    assert leg_key(plain) != leg_key(tuned)
    assert leg_key(tuned) != leg_key(_leg({"boost": "0.5", "context.window": "1"}))


def test_a_leg_as_a_person_reads_it():
    assert describe_leg(_leg({"boost": "0.5"})).startswith("overlap (")
    assert "boost=0.5" in describe_leg(_leg({"boost": "0.5"}))


def test_only_an_accelerator_device_asks_for_a_gpu():
    assert gpus_for(_leg({})) == 0.0  # overlap has no device option

    class Options:
        device = "cuda:1"

    leg = _leg({})
    leg.options = Options()
    assert gpus_for(leg) == 1.0
    Options.device = "cpu"
    assert gpus_for(leg) == 0.0


def test_a_progress_step_names_the_leg_and_only_what_tells_its_searches_apart():
    # The progress line repeated a dense leg's whole options list (about 600 characters) each time.
    from recall_kit.measure.run.distribute import step_names

    alone = _leg({"boost": "0.5"})
    assert "boost=0.5" in describe_leg(alone)  # an error still names every option
    assert step_names({"a": alone}) == {"a": "overlap"}
    variants = {"a": _leg({"boost": "0.5"}), "b": _leg({"boost": "2"}),
                "c": _leg({"boost": "2", "context.window": "1"})}
    assert step_names(variants) == {"a": "overlap (boost=0.5)", "b": "overlap (boost=2.0)",
                                    "c": "overlap (boost=2.0, context.window=1)"}
