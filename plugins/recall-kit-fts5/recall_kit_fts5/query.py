"""Turning any typed string into a safe FTS5 query: our own word split, every word a quoted string.

FTS5's query language gives meaning to `"`, `*`, `^`, `:`, `(`, `)`, `+`, `-`, `{`, `}`, `,` and
to the words AND, OR, NOT and NEAR. A user's query is text, not syntax, so none of that may act:
the query is split into words here, and each word is written as an FTS5 string ("word", inner
quotes doubled). Inside a string FTS5 only runs its tokenizer, so no character or keyword can
change the query's structure, and AND/OR/NOT/NEAR are searched as the plain words they are.
"""

from __future__ import annotations

import unicodedata


def _is_word_character(character: str) -> bool:
    """Letters and numbers (str.isalnum), combining marks (FTS5's unicode61 folds them into the
    letter they follow) and private-use characters (unicode61 counts category Co as a token
    character)."""
    if character.isalnum():
        return True
    category = unicodedata.category(character)
    return category[0] == "M" or category == "Co"


def query_words(text: str) -> list[str]:
    """Maximal runs of word characters in `text`, in order, repeats kept.

    Everything else (spaces, punctuation, FTS5 operator characters, control characters, emoji)
    separates words: `content:"tax*" OR (NEAR` -> ["content", "tax", "OR", "NEAR"].
    """
    words: list[str] = []
    current: list[str] = []
    for character in text:
        if _is_word_character(character):
            current.append(character)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def quote_phrase(word: str) -> str:
    """`word` as an FTS5 string: wrapped in double quotes, any inner double quote doubled."""
    return '"' + word.replace('"', '""') + '"'


#: Characters with a meaning in FTS5's query syntax, for tests and documentation.
FTS5_SYNTAX_CHARACTERS = '"*^:()+-{},'
FTS5_KEYWORDS = ("AND", "OR", "NOT", "NEAR")
