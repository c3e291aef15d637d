"""The grades a person gives on the label page (`recall-kit label`), each with its guide.

Binary by default: the study's decisions read relevance as binary (a grade of 1 or more is
relevant), so a finer scale costs the assessor time and changes no verdict. A study that scores
graded metrics (ndcg) can ask for the graded scale: `[judging] scale = "graded"` in study.toml.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_kit.errors import OptionError


@dataclass(frozen=True)
class Grade:
    """One grade: the number written to the file (and the key that gives it), a name and a guide."""

    value: int
    name: str
    guide: str


BINARY = (
    Grade(0, "not relevant", "The memory does not help answer the query: another topic, or the same topic "
                             "without the fact asked for."),
    Grade(1, "relevant", "The memory holds (part of) what the query asks for: an agent that read it would "
                         "answer better."),
)
GRADED = (
    Grade(0, "not relevant", BINARY[0].guide),
    Grade(1, "related", "On the query's topic and of some help, but not the fact asked for."),
    Grade(2, "relevant", "Holds part of the answer: one of the facts the query needs."),
    Grade(3, "answers it", "Holds the whole answer on its own."),
)
SCALES = {"binary": BINARY, "graded": GRADED}


def scale_named(name: str) -> tuple[Grade, ...]:
    """The scale `name` (``binary`` or ``graded``)."""
    if name not in SCALES:
        raise OptionError(f"[judging] scale = {name!r}: one of {', '.join(SCALES)}.")
    return SCALES[name]
