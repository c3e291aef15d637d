"""A seeded synthetic memory dataset of any size, for benchmarks: exact, paraphrase and multihop
queries over invented people, projects, tools and cities, with authoritative qrels.

Every name is made up from syllables, so no real person appears. The same seed gives the same
bytes. What each stratum means here:

* ``exact``: a 3-6 word span copied verbatim from one memory; relevant are all memories whose
  content holds that span (case-insensitive), so the qrels are exact by construction.
* ``paraphrase``: a question about one personal fact of a named person (their drink, pet,
  allergy, ...) worded with none of the fact's own words; relevant are the memory stating the
  fact and its near-duplicate, if any.
* ``multihop``: a question whose answer sits in a memory linked to the named entity through a
  second memory (person -> project -> tool; project -> lead -> city); graded qrels: the answer
  memory 2, the bridge memory 1 (near-duplicates share their twin's grade).

Memories are 10-60 words: one fact sentence padded with generic work chatter drawn from a
Zipf-distributed invented vocabulary. About 5% of the fact memories are stored twice in other
words (near-duplicates), as memory stores do.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError

MIN_MEMORIES = 30
_SHORT_PET_NAMES = 500

_SYLLABLES = ("ka", "lo", "mi", "ren", "tas", "vo", "qu", "bel", "dor", "fi", "zan", "ul", "pe",
              "shi", "mar", "te", "os", "rin", "gal", "eth", "nu", "bra", "cy", "wen")
_TOPICS = ("billing", "search", "ingest", "storage", "deploy", "metrics", "auth", "reporting",
           "backups", "alerts", "payments", "scheduling", "onboarding", "caching", "exports")
_CATEGORIES = ("note", "meeting", "decision", "runbook")
_ANIMALS = ("cat", "dog", "parrot", "rabbit", "tortoise", "hamster")
_DRINKS = ("oat flat white", "green tea", "espresso", "rooibos", "hot chocolate", "cold brew")
_FOODS = ("peanuts", "shellfish", "sesame", "kiwi", "gluten", "mustard")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_HOBBIES = ("climbing at the bouldering gym", "restoring old bicycles", "sea swimming",
            "playing the cello", "growing chillies on the balcony", "running trail races")
_COMMUTES = ("cycles along the canal", "takes the early tram", "walks across the park",
             "drives and parks by the river")

# Personal facts: (kind, category, keywords, memory wordings, question wordings). A memory wording
# states the fact with the person's full name; its second wording is the near-duplicate. Question
# wordings share none of the fact's content words, only the person's name.
_FACTS: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("pet", "person", "animal home",
     ("{person} has a {animal} called {pet}.", "{person}'s {animal} is named {pet}."),
     ("What is the name of {person}'s companion at home?", "Who keeps {person} company in the flat?")),
    ("drink", "preference", "coffee order",
     ("{person} always orders {drink} before the stand-up.", "{person} prefers {drink} first thing."),
     ("What does {person} like to sip when the day starts?", "Which beverage should I bring {person} early on?")),
    ("allergy", "person", "health diet",
     ("{person} is allergic to {food}, so check the menu.", "{person} cannot eat {food} at all."),
     ("Which ingredient makes {person} ill?", "What must be kept off {person}'s plate?")),
    ("birthday", "person", "dates calendar",
     ("{person}'s birthday is on {day} {month}.", "{person} was born on {day} {month}."),
     ("When do we celebrate {person} getting a year older?", "Which date should go in the calendar for {person}'s party?")),
    ("hobby", "preference", "weekend leisure",
     ("On weekends {person} spends hours {hobby}.", "{person} loves {hobby} on Saturdays."),
     ("What does {person} do for fun outside the office?", "How does {person} unwind when not working?")),
    ("commute", "preference", "travel office",
     ("{person} {commute} to get to the office.", "Every morning {person} {commute} to work."),
     ("How does {person} travel in each day?", "What is {person}'s route into the building?")),
)

_FILLER = (
    "The team agreed to revisit this after the {topic} review.",
    "We should check the {word} numbers again before the release.",
    "Latency for {topic} was higher than expected during the {word} test.",
    "Someone raised the {word} question in the retro and nobody had an answer.",
    "The {topic} dashboard still shows the old {word} panel.",
    "Follow up with the on-call rotation about the {word} alerts.",
    "It took {n} days to get the {word} change through review.",
    "The {word} migration is blocked on a {topic} ticket.",
    "Remember that the {word} job runs every {n} hours.",
    "Budget roughly {n} minutes for the {word} step.",
)


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


def _unique(rng: random.Random, count: int, make: Any, taken: dict[str, None]) -> list[str]:
    """`count` new values of `make()`; a pool that runs dry is an error, never an endless loop."""
    out: list[str] = []
    misses = 0
    while len(out) < count:
        value = make()
        if value not in taken:
            taken[value] = None
            out.append(value)
        else:
            misses += 1
            if misses > 200 * count + 10_000:
                raise DatasetError(f"synth: ran out of distinct invented names ({len(out)} of {count} found).")
    return out


@dataclass
class _Memory:
    content: str
    category: str
    tags: list[str]
    keywords: str
    id: int = 0
    padding: str = ""


@dataclass
class _Builder:
    rng: random.Random
    vocabulary: list[str]
    cumulative: list[float]
    memories: list[_Memory] = field(default_factory=list)
    twins: dict[int, list[int]] = field(default_factory=dict)  # memory index -> its near-duplicates

    def word(self) -> str:
        return self.vocabulary[bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])]

    def pad(self, sentence: str, topic: str, minimum: int = 10) -> str:
        """Generic sentences to follow `sentence`, so that the memory has 10-60 words: a length
        drawn from `minimum`-56 (a near-duplicate's rewording may add a few words)."""
        length = len(sentence.split())
        target = self.rng.randint(max(minimum, length), 56)
        parts: list[str] = []
        while length < target:
            filler = self.rng.choice(_FILLER).format(topic=topic, word=self.word(), n=self.rng.randint(2, 40))
            size = len(filler.split())
            if length + size > 60 or (length + size > target and length >= minimum):
                break
            parts.append(filler)
            length += size
        return " ".join(parts)

    def add(self, sentence: str, category: str, tags: list[str], keywords: str, topic: str,
            minimum: int = 10, padding: str | None = None) -> int:
        """Add a memory; `padding` (a near-duplicate's) reuses another memory's chatter."""
        if padding is None:
            padding = self.pad(sentence, topic, minimum)
        self.memories.append(_Memory(f"{sentence} {padding}".strip(), category, tags, keywords, padding=padding))
        return len(self.memories) - 1

    def maybe_twin(self, index: int, wording: str, category: str, tags: list[str], keywords: str, topic: str) -> None:
        """One time in 20, the same fact re-recorded: new wording, the same chatter as memory `index`."""
        if self.rng.random() < 0.05:
            twin = self.add(wording, category, tags, keywords, topic, padding=self.memories[index].padding)
            self.twins.setdefault(index, []).append(twin)

    def stated(self, index: int) -> list[int]:
        """Memory `index` and its near-duplicates: every memory that states its fact."""
        return [index, *self.twins.get(index, [])]

    def ids(self, indexes: list[int]) -> list[str]:
        """The ids (once assigned) of the memories at `indexes`."""
        return [str(self.memories[i].id) for i in indexes]


def generate(memories: int, queries: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The corpus rows, query rows and qrels rows of a synthetic dataset (see the module doc).

    `memories` must be at least 30; `queries` is split evenly over the three strata (the
    remainder goes to `exact`; a stratum with fewer distinct questions than asked for gives
    its shortfall to `exact`).
    """
    if memories < MIN_MEMORIES:
        raise DatasetError(f"synth: --memories must be at least {MIN_MEMORIES} (got {memories}).")
    if queries < 0:
        raise DatasetError(f"synth: --queries must not be negative (got {queries}).")
    rng = random.Random(seed)
    taken: dict[str, None] = {}
    vocabulary = _unique(rng, 4000, lambda: "".join(rng.choice(_SYLLABLES).lower() for _ in range(rng.randint(2, 4))), taken)
    cumulative = list(accumulate(1.0 / rank ** 1.05 for rank in range(1, len(vocabulary) + 1)))
    builder = _Builder(rng, vocabulary, cumulative)
    names = _Names.invent(rng, memories, taken)
    uses, project_topic = _add_projects(builder, names)
    facts = _add_people(builder, names, project_topic)
    _add_notes(builder, memories, names)

    # Ids 1..N in a seeded shuffle, so related memories are not neighbours.
    order = list(range(len(builder.memories)))
    rng.shuffle(order)
    for new_id, index in enumerate(order, start=1):
        builder.memories[index].id = new_id

    paraphrase, multihop = _questions(builder, names, facts, uses)
    per = queries // 3
    chosen_para = paraphrase[:per]
    chosen_multi = multihop[:per]
    exact_count = queries - len(chosen_para) - len(chosen_multi)
    exact = _exact_queries(builder, exact_count, rng)
    query_rows, qrels_rows = _query_rows((("exact", exact), ("paraphrase", chosen_para), ("multihop", chosen_multi)))
    return _corpus_rows(builder), query_rows, qrels_rows


@dataclass
class _Names:
    """The invented entities a synthetic dataset talks about, and who is where (filled as memories
    are added: a person's city memory, their project and its memory, a project's lead)."""

    people: list[str]
    projects: list[str]
    tools: list[str]
    cities: list[str]
    pets: list[str]
    based: dict[str, int] = field(default_factory=dict)
    works: dict[str, tuple[str, int]] = field(default_factory=dict)
    leads: dict[str, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def invent(cls, rng: random.Random, memories: int, taken: dict[str, None]) -> _Names:
        """Distinct names, as many as a corpus of `memories` needs, none in `taken` (which grows)."""
        n_people = max(2, memories // 12)
        n_projects = max(2, memories // 50)
        people = _unique(rng, n_people, lambda: f"{_name(rng, 2)} {_name(rng, 3)}", taken)
        projects = _unique(rng, n_projects, lambda: _name(rng, 3), taken)
        tools = _unique(rng, max(2, min(40, n_projects)), lambda: _name(rng, 2) + "DB", taken)
        cities = _unique(rng, max(2, min(60, memories // 200)), lambda: _name(rng, 2) + "ton", taken)
        # Two-syllable pet names (576 of them) up to 500 people, three syllables beyond: the two-syllable
        # pool ran dry above ~6,000 memories and synth looped for ever.
        pets = _unique(rng, min(n_people, _SHORT_PET_NAMES), lambda: _name(rng, 2), taken)
        pets += _unique(rng, n_people - len(pets), lambda: _name(rng, 3), taken)
        return cls(people, projects, tools, cities, pets)


def _add_projects(builder: _Builder, names: _Names) -> tuple[dict[str, int], dict[str, str]]:
    """Projects: each uses a tool and depends on another project. Returns each project's
    "uses" memory and its topic."""
    rng, projects = builder.rng, names.projects
    project_topic = {project: rng.choice(_TOPICS) for project in projects}
    uses: dict[str, int] = {}
    for number, project in enumerate(projects):
        topic = project_topic[project]
        tags = [project.lower(), topic]
        tool = rng.choice(names.tools)
        uses[project] = builder.add(f"{project} uses {tool} for {topic}.", "project", tags, f"{topic} database", topic)
        builder.maybe_twin(uses[project], f"For {topic}, {project} relies on {tool}.", "project", tags, f"{topic} database", topic)
        other = projects[(number + 1 + rng.randrange(len(projects) - 1)) % len(projects)]
        builder.add(f"{project} depends on {other} for {topic}.", "project", tags, "dependency", topic)
    return uses, project_topic


def _add_people(
    builder: _Builder, names: _Names, project_topic: dict[str, str]
) -> list[tuple[str, int, tuple[str, ...]]]:
    """People: a city, a project (the first person on a project leads it), three personal facts.
    Returns the facts: (person, memory index, question wordings)."""
    rng, projects = builder.rng, names.projects
    facts: list[tuple[str, int, tuple[str, ...]]] = []
    for number, person in enumerate(names.people):
        city = rng.choice(names.cities)
        tags = ["people", city.lower()]
        names.based[person] = builder.add(f"{person} is based in {city}.", "person", tags, "location home", "onboarding")
        builder.maybe_twin(names.based[person], f"{person} lives in {city} these days.", "person", tags, "location home", "onboarding")
        project = projects[number] if number < len(projects) else rng.choice(projects)
        topic = project_topic[project]
        tags = [project.lower(), "people"]
        if project not in names.leads:
            index = builder.add(f"{person} leads {project} and owns the {topic} roadmap.", "person", tags, "team lead owner", topic)
            names.leads[project] = (person, index)
        else:
            index = builder.add(f"{person} works on {project} with the {topic} group.", "person", tags, "team member", topic)
        names.works[person] = (project, index)
        values = {"person": person, "animal": rng.choice(_ANIMALS), "pet": names.pets[number],
                  "drink": rng.choice(_DRINKS), "food": rng.choice(_FOODS), "day": rng.randint(1, 28),
                  "month": rng.choice(_MONTHS), "hobby": rng.choice(_HOBBIES), "commute": rng.choice(_COMMUTES)}
        for kind, category, keywords, wordings, questions in rng.sample(_FACTS, 3):
            tags = ["people", kind]
            # At least 20 words: a paraphrase question shares only the name with its memory.
            topic = rng.choice(_TOPICS)
            index = builder.add(wordings[0].format(**values), category, tags, keywords, topic, minimum=20)
            builder.maybe_twin(index, wordings[1].format(**values), category, tags, keywords, topic)
            facts.append((person, index, tuple(q.format(**values) for q in questions)))
    return facts


def _add_notes(builder: _Builder, memories: int, names: _Names) -> None:
    """The rest, up to `memories`: notes about a project or a person, chatter around one entity name."""
    rng = builder.rng
    while len(builder.memories) < memories:
        topic = rng.choice(_TOPICS)
        if rng.random() < 0.6:
            project = rng.choice(names.projects)
            sentence = f"Note on {project}: the {topic} work needs a {builder.word()} pass."
            tags = [project.lower(), topic]
        else:
            person = rng.choice(names.people)
            sentence = f"{person} mentioned the {builder.word()} idea in the {topic} sync."
            tags = ["people", topic]
        builder.add(sentence, rng.choice(_CATEGORIES), tags, f"{topic} {builder.word()}", topic)


def _questions(
    builder: _Builder, names: _Names, facts: list[tuple[str, int, tuple[str, ...]]], uses: dict[str, int]
) -> tuple[list[tuple[str, dict[str, int]]], list[tuple[str, dict[str, int]]]]:
    """The paraphrase and multihop questions, each with its judgments (memory id -> grade), shuffled."""
    rng, ids, stated = builder.rng, builder.ids, builder.stated
    paraphrase: list[tuple[str, dict[str, int]]] = []
    for _person, index, questions in facts:
        paraphrase.append((rng.choice(questions), dict.fromkeys(ids(stated(index)), 1)))
    multihop: list[tuple[str, dict[str, int]]] = []
    for person in names.people:
        project, bridge = names.works[person]
        answer = uses[project]
        text = rng.choice(("Which database does the project {p} works on use?",
                           "What storage sits under {p}'s project?")).format(p=person)
        multihop.append((text, {**dict.fromkeys(ids(stated(bridge)), 1), **dict.fromkeys(ids(stated(answer)), 2)}))
    for project, (person, bridge) in names.leads.items():
        answer = names.based[person]
        text = rng.choice(("Where is the lead of {p} based?", "Which city does whoever runs {p} live in?")).format(p=project)
        multihop.append((text, {**dict.fromkeys(ids(stated(bridge)), 1), **dict.fromkeys(ids(stated(answer)), 2)}))
    rng.shuffle(paraphrase)
    rng.shuffle(multihop)
    return paraphrase, multihop


def _query_rows(
    strata: Sequence[tuple[str, list[tuple[str, dict[str, int]]]]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The query rows and qrels rows of each stratum's questions (graded judgments for multihop)."""
    query_rows: list[dict[str, Any]] = []
    qrels_rows: list[dict[str, Any]] = []
    for stratum, items in strata:
        for number, (text, judgments) in enumerate(items, start=1):
            query_id = f"{stratum}_{number:05d}"
            query_rows.append({"query_id": query_id, "text": text, "stratum": stratum})
            if stratum == "multihop":
                qrels_rows.append({"query_id": query_id, "relevance": judgments})
            else:
                qrels_rows.append({"query_id": query_id, "relevant_ids": [int(i) for i in judgments]})
    return query_rows, qrels_rows


def _corpus_rows(builder: _Builder) -> list[dict[str, Any]]:
    """The corpus rows in id order, each with a drawn importance and creation time."""
    rng = builder.rng
    corpus_rows = []
    for memory in sorted(builder.memories, key=lambda m: m.id):
        corpus_rows.append({
            "id": memory.id, "content": memory.content, "category": memory.category,
            "tags": ",".join(memory.tags), "expanded_keywords": memory.keywords,
            "importance": round(rng.uniform(0.2, 0.95), 2),
            "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
        })
    return corpus_rows


def _exact_queries(builder: _Builder, count: int, rng: random.Random) -> list[tuple[str, dict[str, int]]]:
    """`count` verbatim spans of 3-6 words found in at most 3 memories, each judged relevant in
    every memory that holds it."""
    lowered = [memory.content.lower() for memory in builder.memories]
    by_word: dict[str, list[int]] = {}
    for index, text in enumerate(lowered):
        for word in dict.fromkeys(text.split()):
            by_word.setdefault(word, []).append(index)
    out: list[tuple[str, dict[str, int]]] = []
    seen: dict[str, None] = {}
    attempts = 0
    while len(out) < count:
        attempts += 1
        index = rng.randrange(len(builder.memories))
        words = builder.memories[index].content.split()
        size = rng.randint(3, min(6, len(words)))
        start = rng.randrange(len(words) - size + 1)
        span = " ".join(words[start:start + size]).strip(".,:;'?!")
        key = span.lower()
        if len(span.split()) < 3 or (key in seen and attempts < 50 * (count + 1)):
            continue
        seen[key] = None
        # Candidates hold the span's rarest whitespace word; then the substring decides.
        inner = key.split()[1:-1] or key.split()
        rarest = min(inner, key=lambda w: len(by_word.get(w, ())))
        relevant = [i for i in by_word.get(rarest, range(len(lowered))) if key in lowered[i]]
        if not relevant:  # cannot happen: the span came from memory `index`
            relevant = [index]
        if len(relevant) > 3 and attempts < 50 * (count + 1):
            continue  # a stock phrase of the chatter: not what someone searches for verbatim
        out.append((span, {str(builder.memories[i].id): 1 for i in sorted(relevant, key=lambda i: builder.memories[i].id)}))
    return out


def write_synthetic_dataset(destination: str | Path, memories: int, queries: int, seed: int = 0,
                            force: bool = False) -> dict[str, Any]:
    """Generate a dataset (see `generate`) into `destination` (absent or empty unless `force`),
    check it with `read_dataset`, and return counts (never any text)."""
    from recall_kit.curate.importers._writer import atomic_folder, write_dataset_files
    from recall_kit.dataset import read_dataset

    corpus_rows, query_rows, qrels_rows = generate(memories, queries, seed)
    with atomic_folder(destination, force=force) as folder:
        write_dataset_files(folder, corpus_rows, query_rows, qrels_rows)
        _, problems = read_dataset(folder)
        if problems:
            raise DatasetError(f"synth wrote a dataset that does not validate: {problems[0]}")
    strata: dict[str, int] = {}
    for row in query_rows:
        strata[row["stratum"]] = strata.get(row["stratum"], 0) + 1
    return {"memories": len(corpus_rows), "queries": len(query_rows), "strata": strata, "seed": seed}
