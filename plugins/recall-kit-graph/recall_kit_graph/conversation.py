"""The `conversation` extractor: rules for dialogue turns ("Caroline: I went camping with my
kids"), offline, no model: the speaker, topic words, and what a speaker says of themselves."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from recall_kit.plugin import Corpus
from recall_kit_graph.extractors import _SENTENCE_START, Extractor, Fact, Mention, Relation
from recall_kit_graph.normalise import STOPWORDS, normalise_concept, words

#: "Name: text" at the start of a turn (one to three capitalised words, then a colon).
SPEAKER = re.compile(r"^\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+")

#: Words of chat that name no topic: fillers, feelings, reactions, light verbs. Topic words are
#: the other lowercase words of three letters or more (the graph's normalisation applies).
CHAT_STOPWORDS: frozenset[str] = frozenset(
    "hey hi hello yeah yes yep wow oh ok okay thanks thank really totally definitely absolutely "
    "great good nice cool awesome amazing wonderful fantastic glad happy sure lot lots much many "
    "like love loved loving know knew think thought feel felt make made get got going gonna go "
    "went want wanted see saw seen look looking looks take took say said tell told let keep kept "
    "way thing things something anything everything stuff time times day days today yesterday "
    "week weeks year years ago last next new old big little bit kind sort pretty well still even "
    "always never often sometimes maybe lately recently soon later back away around together "
    "one two three first really much more less best better super huge tough hard easy "
    "sound sounds sounded hope hoping mean means meant need needs needed try trying tried "
    "come came coming give gave given find found help helped helps keep doing done being "
    "what's that's it's i'm you're we're they're i've you've i'll don't can't didn't isn't "
    "wasn't won't".split()
)

#: Relation patterns a speaker states about themselves: (type, pattern before the object).
FIRST_PERSON: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("has", re.compile(r"\bmy (?:\w+ )?(\w+)", re.IGNORECASE)),
    ("went_to", re.compile(r"\b(?:went|go|going|been|trip|travel(?:l?ed)?|moved|visit(?:ed|ing)?) "
                           r"(?:to|in|into) (?:the )?([A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2})")),
    ("from", re.compile(r"\b(?:from|moved from) (?:my )?(?:home country, )?([A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2})")),
)


def speaker_of(content: str) -> str | None:
    """The speaker of a turn written "Name: text", else None."""
    match = SPEAKER.match(content)
    return match.group(1) if match else None


def topic_words(text: str) -> list[str]:
    """The topic words of `text`, normalised, in order, repeats dropped: words of three letters or
    more that are neither function words nor chat fillers, nor capitalised mid-sentence (names,
    which the `rules` extractor finds)."""
    found: dict[str, None] = {}
    for match in words(text):
        word = match.group()
        if not word.isalpha() or len(word) < 3:
            continue
        if word[:1].isupper() and not _SENTENCE_START.search(text[: match.start()]):
            continue
        folded = word.casefold()
        if folded in STOPWORDS or folded in CHAT_STOPWORDS:
            continue
        name = normalise_concept(folded)
        if name and name not in CHAT_STOPWORDS:
            found[name] = None
    return list(found)


class ConversationExtractor(Extractor):
    """Rules for dialogue turns: the speaker of "Name: text" (edge `said_by`), topic words
    (`mentions`, kind `topic`; a word in more than `topic_max_share` of the memories is left
    out, as it bridges nothing), and first-person relations of the speaker: "my kids" ->
    speaker `has` kid, "we went to Paris" -> speaker `went_to` Paris, "moved from Sweden" ->
    speaker `from` Sweden. Run it with `rules` for names: `extractors=rules,conversation`."""

    description = "Dialogue turns: speaker, topic words, first-person relations ('my kids'); no model."
    VERSION = "conversation-1"

    def cache_key(self) -> str:
        return f"{self.VERSION}:{self._max_share()}"

    def _max_share(self) -> float:
        return float(getattr(self.options, "topic_max_share", 0.05))

    def extract(self, corpus: Corpus) -> Iterator[Fact]:
        per_memory: list[tuple[str, str | None, str, list[str]]] = []
        frequency: Counter[str] = Counter()
        for memory in corpus:
            speaker = speaker_of(memory.content)
            text = SPEAKER.sub("", memory.content, count=1) if speaker else memory.content
            topics = topic_words(text)
            frequency.update(topics)
            per_memory.append((memory.id, speaker, text, topics))
        limit = max(2.0, self._max_share() * len(corpus))
        for memory_id, speaker, text, topics in per_memory:
            if speaker is not None:
                yield Mention(memory_id, speaker, "said_by", "speaker")
            for topic in topics:
                if frequency[topic] <= limit:
                    yield Mention(memory_id, topic, "mentions", "topic")
            if speaker is not None:
                yield from self._first_person(memory_id, speaker, text)

    def _first_person(self, memory_id: str, speaker: str, text: str) -> Iterator[Fact]:
        for relation, pattern in FIRST_PERSON:
            for match in pattern.finditer(text):
                thing = match.group(1)
                name = normalise_concept(thing)
                if not name or name in CHAT_STOPWORDS or len(name) < 3:
                    continue
                yield Mention(memory_id, thing, "mentions", "relation")
                yield Relation(speaker, relation, thing, memory_id)

