"""`recall-kit remote probe`: one search call to a live system, and what its answer looks like:
the answer's shape, the candidate paths (or, for text, regular expressions) for the hits' ids,
text and scores, and the `-o` options that would read them. Ids and numbers are shown, never a
memory's text (only where text is and how long)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

#: Key names that usually hold an id, a text, a score (lower rank: preferred).
ID_NAMES = ("id", "memory_id", "doc_id", "uuid", "hash", "content_hash", "key", "name", "permalink", "slug", "path")
TEXT_NAMES = ("content", "text", "memory", "observations", "body", "snippet", "document")
SCORE_NAMES = ("score", "similarity", "relevance", "distance", "rank", "bm25")
#: An id-looking token: no space, at most this long.
ID_LENGTH = 128
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
#: The group an id pattern reads: a token up to a space or punctuation.
ID_GROUP = r"([^\s,;\"'()\[\]{}]+)"


@dataclass
class Finding:
    """What the probe found in one answer."""

    shape: str
    results: str | None = None
    count: int = 0
    ids: list[tuple[str, str]] = field(default_factory=list)  # (path or pattern, an example id as shown)
    texts: list[str] = field(default_factory=list)
    scores: list[tuple[str, str]] = field(default_factory=list)  # (path or pattern, order)
    text_answer: bool = False

    def options(self, prefix: str) -> list[str]:
        """The `-o` options that read this answer (empty when no hits were found)."""
        if not self.ids:
            return []
        chosen: dict[str, str] = {}
        if self.text_answer:
            chosen["id_pattern"] = self.ids[0][0]
            if self.scores:
                chosen["score_pattern"] = self.scores[0][0]
        else:
            chosen["results"] = self.results or ""
            chosen["id"] = self.ids[0][0]
            chosen["score"] = self.scores[0][0] if self.scores else ""
        if self.scores and self.scores[0][1] == "ascending":
            chosen["score_order"] = "ascending"
        return [f"-o {shlex.quote(f'{prefix}.{key}={value}')}" for key, value in chosen.items()]


#: The longest key the probe prints: a field's name or an id, not a text.
KEY_LENGTH = 64


def name_like(key: str) -> bool:
    """Whether an answer's key may be printed: a field's name or an id (printable, no space, at
    most `KEY_LENGTH` characters). A server may key a map by a memory's text, or put terminal
    escapes in a key; such a key is never printed, and no path through it is offered."""
    return 0 < len(key) <= KEY_LENGTH and key.isprintable() and not any(char.isspace() for char in key)


def _shown_key(key: str) -> str:
    return key if name_like(key) else f"<a {len(key)}-character key, not shown>"


def shape_of(value: Any, depth: int = 0) -> str:
    """A value's shape, types and lengths only: `{entities: list[3] of {name: str, ...}}`."""
    if depth > 4:
        return "..."
    if isinstance(value, dict):
        inner = ", ".join(f"{_shown_key(key)}: {shape_of(item, depth + 1)}" for key, item in list(value.items())[:12])
        return "{" + inner + (", ..." if len(value) > 12 else "") + "}"
    if isinstance(value, list):
        return f"list[{len(value)}]" + (f" of {shape_of(value[0], depth + 1)}" if value else "")
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str" if len(value) < 40 else f"str({len(value)} chars)"
    return "null" if value is None else type(value).__name__


#: How deep the probe looks for the hit list (an answer nested deeper holds it nowhere a path reads).
MAX_DEPTH = 8


def _lists(value: Any, path: str = "", depth: int = 0) -> list[tuple[str, list[Any]]]:
    """Every non-empty list in a JSON value with its path (`[]` for each element on the way),
    `MAX_DEPTH` levels deep."""
    found: list[tuple[str, list[Any]]] = []
    if depth > MAX_DEPTH:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            if name_like(key):
                found += _lists(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list) and value:
        found.append((path, value))
        if isinstance(value[0], dict):
            found += [(inner, items) for inner, items in _lists(value[0], f"{path}[]", depth + 1)
                      if "[]" not in inner[len(path) + 2:]]
    return found


def _leaves(entry: Any, path: str = "", depth: int = 0) -> dict[str, Any]:
    """An entry's scalar (and list-of-strings) values by dotted path, two levels deep."""
    if not isinstance(entry, dict) or depth > 2:
        return {}
    found: dict[str, Any] = {}
    for key, value in entry.items():
        if not name_like(key):
            continue
        where = f"{path}.{key}" if path else str(key)
        if isinstance(value, dict):
            found |= _leaves(value, where, depth + 1)
        else:
            found[where] = value
    return found


def _preference(path: str, names: tuple[str, ...]) -> int:
    last = path.rsplit(".", 1)[-1].lower()
    return names.index(last) if last in names else len(names)


#: The most bits an integer id has (about 120 digits); a longer one is neither shown nor read
#: as a number (Python will not print an int of more than 4,300 digits, nor make a float of it).
ID_BITS = 400


def _id_like(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value.bit_length() <= ID_BITS
    return isinstance(value, str) and 0 < len(value) <= ID_LENGTH and not any(char.isspace() for char in value)


def _number(value: Any) -> bool:
    """A score's value: a float, or an int a float can hold."""
    return isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)
                                        and value.bit_length() <= 1000)


def _order(values: list[float]) -> str:
    if values == sorted(values, reverse=True):
        return "descending"
    return "ascending" if values == sorted(values) else "unordered"


def describe_json(payload: Any) -> Finding:
    """The hit list in a JSON answer: the list of objects whose entries hold the most id-like
    values (or a list of ids itself), and in it the paths to ids, texts and scores."""
    finding = Finding(shape=shape_of(payload))
    best: tuple[int, int, str, list[Any]] | None = None
    for path, items in _lists(payload):
        objects = [item for item in items if isinstance(item, dict)]
        rank = (1 if len(objects) == len(items) else 0, len(items))
        if best is None or rank > best[:2]:
            best = (*rank, path, items)
    if best is None:
        return finding
    _, _, path, items = best
    finding.results, finding.count = path, len(items)
    if not isinstance(items[0], dict):
        if all(_id_like(item) for item in items):
            finding.results, finding.ids = path, [("", example(path, str(items[0])))]
        return finding
    leaves = [_leaves(item) for item in items]
    keys = [key for key in leaves[0] if all(key in leaf for leaf in leaves)]
    ids = [key for key in keys if all(_id_like(leaf[key]) for leaf in leaves) and not _text_named(key)
           and len({str(leaf[key]) for leaf in leaves}) == len(leaves)]
    finding.ids = [(key, example(key, str(leaves[0][key]))) for key in sorted(ids, key=lambda key: _preference(key, ID_NAMES))]
    texts = [key for key in keys if all(isinstance(leaf[key], (str, list)) for leaf in leaves) and key not in ids]
    finding.texts = sorted(texts, key=lambda key: _preference(key, TEXT_NAMES))
    scores = [key for key in keys if all(_number(leaf[key]) for leaf in leaves) and key not in ids]
    finding.scores = [(key, _order([float(leaf[key]) for leaf in leaves]))
                      for key in sorted(scores, key=lambda key: _preference(key, SCORE_NAMES))]
    finding.scores = [score for score in finding.scores if score[1] != "unordered"] or []
    return finding


def describe_text(text: str) -> Finding:
    """Ids and scores in a text answer: each `label: value` the text repeats, as a regular
    expression with one group (ids: tokens without spaces, mostly distinct; scores: numbers)."""
    lines = text.splitlines()
    finding = Finding(shape=f"text ({len(text)} characters, {len(lines)} lines)", text_answer=True)
    labelled: dict[str, list[str]] = {}
    for match in re.finditer(r"([A-Za-z_][\w ]{0,30}?)[ \t]*[:=][ \t]*[\"']?([^\s,;\"'()\[\]{}]+)", text):
        labelled.setdefault(match.group(1).strip(), []).append(match.group(2))
    ids: list[tuple[int, int, str, str]] = []  # (preference, -matches, pattern, an example)
    scores: list[tuple[int, str, str]] = []  # (preference, pattern, order)
    for label, values in labelled.items():
        distinct_ids = (len(set(values)) == len(values) and all(_id_like(value) for value in values)
                        and not _text_named(label))
        if distinct_ids and _preference(label, ID_NAMES) < len(ID_NAMES):  # "id: 12" is an id, not a score
            ids.append((_preference(label, ID_NAMES), -len(values), _labelled(label, ID_GROUP), example(label, values[0])))
        elif all(re.fullmatch(_NUMBER, value) for value in values):
            numbers = [float(value) for value in values]
            order = _order(numbers)
            if order != "unordered" and (_preference(label, SCORE_NAMES) < len(SCORE_NAMES) or len(set(numbers)) > 1):
                scores.append((_preference(label, SCORE_NAMES), _labelled(label, f"({_NUMBER})"), order))
        elif distinct_ids:
            ids.append((_preference(label, ID_NAMES), -len(values), _labelled(label, ID_GROUP), example(label, values[0])))
    for pattern in (r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b", r"\b([0-9a-f]{16,})\b"):
        found = re.findall(pattern, text)
        if found and len(set(found)) == len(found):
            ids.append((len(ID_NAMES) + 1, -len(found), pattern, repr(found[0])))  # hex: no text
    ids.sort()
    finding.ids = [(pattern, example) for _, _, pattern, example in ids]
    finding.scores = [(pattern, order) for _, pattern, order in sorted(scores)]
    finding.count = -ids[0][1] if ids else 0
    return finding


def _text_named(path: str) -> bool:
    """A key or label named as text is (`content`, `memory`, ...): a one-word memory there is no id."""
    return _preference(path, TEXT_NAMES) < len(TEXT_NAMES)


def example(name: str, value: str) -> str:
    """An id as the probe shows it: itself where its key or label `name` says it is an id, else
    only its length: a value under another name may be a memory's text."""
    if _preference(name, ID_NAMES) < len(ID_NAMES):
        return repr(value)
    return f"a {len(value)}-character value, not shown: {(name.rsplit('.', 1)[-1] or 'each entry')!r} is no id's name"


def _labelled(label: str, group: str) -> str:
    return re.escape(label).replace(r"\ ", " ") + r"[ \t]*[:=][ \t]*[\"']?" + group


def report(where: str, payloads: list[Any], prefix: str) -> tuple[list[str], list[str]]:
    """The probe's lines for the answer's payloads (the first that holds hits is read), and the
    options that read it (empty: none found)."""
    lines = [f"{where} answered {len(payloads)} {'part' if len(payloads) == 1 else 'parts'}."]
    chosen: Finding | None = None
    for number, payload in enumerate(payloads, start=1):
        finding = describe_text(payload) if isinstance(payload, str) else describe_json(payload)
        lines.append(f"part {number}: {finding.shape}")
        if chosen is None and finding.ids:
            chosen = finding
    if chosen is None:
        lines.append("No list of hits with ids found: ask a query the system has memories for (--query).")
        return lines, []
    what = "patterns" if chosen.text_answer else "paths"
    if not chosen.text_answer:
        lines.append(f"hits: {chosen.results or '(the answer itself)'} ({chosen.count} entries)")
    lines.append(f"id {what}:    " + "; ".join(f"{path or '(each entry)'} (e.g. {shown})" for path, shown in chosen.ids))
    if chosen.texts:
        lines.append(f"text {what}:  " + "; ".join(chosen.texts) + " (not shown)")
    lines.append(f"score {what}: " + ("; ".join(f"{path} ({order})" for path, order in chosen.scores)
                                      if chosen.scores else "none: rank only (1/rank)"))
    options = chosen.options(prefix)
    lines.append("options: " + " ".join(options))
    return lines, options
