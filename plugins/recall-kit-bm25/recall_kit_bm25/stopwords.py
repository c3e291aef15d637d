"""A small English stop-word list (articles, pronouns, auxiliaries, prepositions, conjunctions)."""

from __future__ import annotations

# Kept short on purpose: words that carry no topic in a memory or a question. Negations ("not",
# "no", "never") are left out, since "doesn't like coffee" and "likes coffee" differ.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but if then else so than that this these those there here
    i me my mine myself we us our ours you your yours he him his she her hers it its
    they them their theirs what which who whom whose when where why how
    am is are was were be been being have has had having do does did doing
    will would shall should can could may might must
    of to in on at by for with about against between into through during before after
    above below from up down out off over under again further once
    as until while all any both each few more most other some such only own same
    too very just also s t d ll m re ve
    """.split()  # noqa: SIM905 (a word list reads best as text)
)
