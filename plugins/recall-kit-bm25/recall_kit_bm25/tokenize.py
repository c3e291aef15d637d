"""The tokenizer shared by indexing and querying: lowercase, Unicode word runs, optional stop words
and a stemmer (the light S-stemmer, or Snowball's English stemmer through PyStemmer)."""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

from recall_kit_bm25.stopwords import ENGLISH_STOPWORDS

# A token is a maximal run of Unicode word characters (letters, digits, underscore) after
# str.lower(): "Café-au-lait, v2!" -> ["café", "au", "lait", "v2"].
_WORD = re.compile(r"\w+")


def s_stem(word: str) -> str:
    """Harman's S-stemmer (Harman 1991, "How effective is suffixing?", JASIS 42(1)).

    Only plural endings are removed, which is conservative and predictable; the first rule that
    applies wins:
      1. "-ies" -> "-y", unless the word ends in "-eies" or "-aies"  (queries -> query)
      2. "-es" -> "-e", unless the word ends in "-aes", "-ees" or "-oes"  (notes -> note)
      3. "-s" -> "", unless the word ends in "-us" or "-ss"  (meetings -> meeting)
    Words of three characters or fewer are left alone ("is", "gas", "yes").
    """
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


@functools.cache
def snowball_stemmer() -> Any:
    """PyStemmer's Snowball English ("Porter 2") stemmer, made once (imported when first needed)."""
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(
    text: str, stopwords: bool = False, stemming: bool = False,
    stemmer: Literal["s", "snowball"] = "s",
) -> list[str]:
    """Split `text` into tokens: lowercase runs of word characters, in order, repeats kept.

    `stopwords` drops the words of `ENGLISH_STOPWORDS`; `stemming` applies the `stemmer`:
    `s` (`s_stem`, plurals only) or `snowball` (Snowball's English stemmer, via PyStemmer's
    `stemWords`). Stop words are removed before stemming.
    """
    tokens = _WORD.findall(text.lower())
    if stopwords:
        tokens = [token for token in tokens if token not in ENGLISH_STOPWORDS]
    if stemming:
        if stemmer == "snowball":
            tokens = snowball_stemmer().stemWords(tokens)
        else:
            tokens = [s_stem(token) for token in tokens]
    return tokens
