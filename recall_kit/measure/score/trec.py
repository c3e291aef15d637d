"""Reading and writing TREC run and qrels files, ordered and validated as trec_eval does.

Two readers share one meaning. The fast one (`_regular_columns`) reads a regular file (one
separator between fields, ``\\n`` line ends, no comments, the exact number of fields) as numpy
arrays without a Python loop; anything else, and any problem it meets, sends the file to the exact
line-by-line reader, which reads what trec_eval reads (comments, fields past the run tag, grades
such as ``3.0``) and names the file and line of a malformed one.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recall_kit.errors import DatasetError
from recall_kit.fileio import atomic_open
from recall_kit.types import Hit, Qrels, sort_hits

if TYPE_CHECKING:
    import numpy as np

RUN_COLUMNS = 6  # qid Q0 docid rank score tag [anything after the tag is ignored, as trec_eval does]
QRELS_COLUMNS = 4  # qid iter docid rel
# trec_eval reads a grade with atol(): its integer part. "3.0" is 3; "1e2" or "yes" is malformed.
_GRADE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?")
# trec_eval reads a score with atof(): C's decimal or exponent syntax, ASCII digits. Python's
# float() also takes "1_0" and other scripts' digits ("١٠"), which atof reads as 1 (or 0); on
# ASCII text without "_" the two agree (float() refuses hex "0x10" and "1.5abc", which atof reads
# as 16 and 1.5): a score outside that common ground is refused with its file and line.
#: A UTF-8 byte order mark: trec_eval reads it as part of the first query id, so it is refused.
BOM = b"\xef\xbb\xbf"


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror or error})") from None


def _lines(path: Path, raw: bytes | None = None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every line that is neither blank nor a ``#`` comment.

    Fields are split on ASCII whitespace, as trec_eval's ``isspace`` does.
    """
    if raw is None:
        raw = _read_bytes(path)
    if raw.startswith(BOM):
        raise DatasetError(
            f"{path.name}:1: begins with a UTF-8 byte order mark (BOM), which would become part of "
            "the first id: save the file without it"
        )
    for number, line in enumerate(raw.split(b"\n"), start=1):
        fields = line.split()
        if not fields or fields[0].startswith(b"#"):
            continue
        if b"\x00" in line:  # trec_eval's C strings end there: it would read another id than recall-kit
            raise DatasetError(f"{path.name}:{number}: holds a NUL byte (\\x00), which ends an id in trec_eval")
        try:
            yield number, [field.decode("utf-8") for field in fields]
        except UnicodeDecodeError:
            raise DatasetError(f"{path.name}:{number}: not UTF-8 text") from None


def parse_score(raw: str) -> float | None:
    """A run score as trec_eval's atof() reads it, or None where the two could differ (see above)."""
    if not raw.isascii() or "_" in raw:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def _parse_grade(raw: str) -> int | None:
    """A qrels grade as trec_eval's atol() reads it: the integer part of a decimal number."""
    if not _GRADE.fullmatch(raw):
        return None
    return int(raw.split(".", 1)[0])


def read_run(path: Path | str) -> dict[str, list[Hit]]:
    """Read a TREC run (``qid Q0 docid rank score tag`` per line) into rankings by query id.

    Read as trec_eval reads it: blank lines and ``#`` comment lines are skipped, fields after the
    run tag are ignored, the rank column is ignored, and each ranking is in trec_eval's order
    (`sort_hits`). Queries keep the order of their first line. A line with fewer than six fields,
    a score that is not a number (or NaN), or a document twice in one query raises `DatasetError`
    naming file and line.
    """
    path = Path(path)
    hits: dict[str, list[Hit]] = {}
    seen: dict[str, set[str]] = {}
    for number, fields in _lines(path):
        if len(fields) < RUN_COLUMNS:
            raise DatasetError(
                f"{path.name}:{number}: expected {RUN_COLUMNS} columns "
                f"(qid Q0 docid rank score tag), got {len(fields)}"
            )
        query_id, _, doc_id, _, raw_score = fields[:5]
        score = parse_score(raw_score)
        if score is None:
            raise DatasetError(
                f"{path.name}:{number}: score {raw_score[:40]!r} is not a number: write ASCII digits, "
                "an optional sign, point and exponent (what trec_eval's atof and recall-kit read alike)"
            )
        if math.isnan(score):
            raise DatasetError(f"{path.name}:{number}: score is NaN")
        docs = seen.setdefault(query_id, set())
        if doc_id in docs:
            raise DatasetError(
                f"{path.name}:{number}: document {doc_id!r} appears twice for query {query_id!r}"
            )
        docs.add(doc_id)
        hits.setdefault(query_id, []).append(Hit(doc_id, score))
    return {query_id: sort_hits(query_hits) for query_id, query_hits in hits.items()}


def read_qrels(path: Path | str) -> Qrels:
    """Read TREC qrels (``qid iter docid rel`` per line) into ``{qid: {docid: grade}}``.

    Read as trec_eval reads it: blank lines and ``#`` comment lines are skipped; a grade is the
    integer part of a decimal number (``3.0`` is 3, as trec_eval's ``atol``); 0 (or less) is
    judged not relevant. A line without exactly four fields, a grade that is not a decimal number,
    or a document judged twice for one query raises `DatasetError` naming file and line.
    """
    path = Path(path)
    qrels: Qrels = {}
    for number, fields in _lines(path):
        if len(fields) != QRELS_COLUMNS:
            raise DatasetError(
                f"{path.name}:{number}: expected {QRELS_COLUMNS} columns "
                f"(qid iter docid rel), got {len(fields)}"
            )
        query_id, _, doc_id, raw_grade = fields
        grade = _parse_grade(raw_grade)
        if grade is None:
            raise DatasetError(
                f"{path.name}:{number}: relevance {raw_grade[:40]!r} is not an integer"
            )
        if not -1000 <= grade <= 1000:  # recall_kit.dataset.MIN_GRADE..MAX_GRADE
            raise DatasetError(f"{path.name}:{number}: relevance {raw_grade[:40]} is outside -1000..1000")
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged:
            raise DatasetError(
                f"{path.name}:{number}: document {doc_id!r} is judged twice for query {query_id!r}"
            )
        judged[doc_id] = grade
    return qrels


@dataclass(frozen=True)
class TrecTable:
    """A TREC file's rows as arrays, one row per line, in file order.

    `query_ids` and `doc_ids` are numpy bytes arrays (dtype ``S``, UTF-8); `values` holds the
    scores (float64) of a run or the grades (int64) of qrels.
    """

    query_ids: np.ndarray
    doc_ids: np.ndarray
    values: np.ndarray


def read_run_table(path: Path | str) -> TrecTable:
    """Read a TREC run as arrays: the fast reader for a regular file, else `read_run`'s rows.

    Duplicate documents are not checked here (`recall_kit.measure.score.join.judge_tables` finds them).
    """
    path = Path(path)
    _keep_freed_memory()
    with _mapped(path) as raw:  # a NUL byte: the exact reader names its line (numpy's bytes would drop it)
        table = None if raw.find(b"\x00") >= 0 else _fast_table_in_parts(raw, RUN_COLUMNS, score_column=4)
    if table is not None:
        return table
    run = read_run(path)
    return _table([(query, hit.id, hit.score) for query, hits in run.items() for hit in hits], float)


def read_qrels_table(path: Path | str) -> TrecTable:
    """Read TREC qrels as arrays: the fast reader for a regular file, else `read_qrels`'s rows."""
    path = Path(path)
    with _mapped(path) as raw:
        table = None if raw.find(b"\x00") >= 0 else _fast_table(raw, QRELS_COLUMNS, score_column=None)
    if table is not None and len(table.values) and not (-1000 <= table.values.min() and table.values.max() <= 1000):
        table = None  # a grade out of range: the exact reader names its line
    if table is not None:
        return table
    qrels = read_qrels(path)
    return _table([(query, doc, grade) for query, judged in qrels.items() for doc, grade in judged.items()], int)


def _keep_freed_memory() -> None:
    """On glibc, serve arrays up to 32 MiB from the heap and keep freed heap memory for reuse.

    Reading and joining a large run allocates and frees many file-sized arrays; by default each
    is a fresh mmap whose pages the kernel faults in and zeroes again, which cost as much CPU as
    the work itself (100,000 queries x 100 results: 109k page faults and 7.8 s of system time,
    59k and 4.6 s with this). The process keeps up to that memory a little longer; nothing else
    changes. A no-op where mallopt is not glibc's.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 32 * 2**20)  # M_MMAP_THRESHOLD: glibc's largest
    mallopt(-1, 2**31 - 1)  # M_TRIM_THRESHOLD
    mallopt(-2, 64 * 2**20)  # M_TOP_PAD
    mallopt(-8, 1)  # M_ARENA_MAX: threads reading parts of a file share that heap


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The file's bytes, memory-mapped (no copy of a large file); b"" for an empty file."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                yield b""
                return
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                yield mapped
            finally:
                with contextlib.suppress(BufferError):  # an array still viewing it: freed with it
                    mapped.close()
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror or error})") from None


def _table(rows: list[tuple[str, str, float]], kind: type) -> TrecTable:
    import numpy as np

    def strings(values: list[str]) -> np.ndarray:
        return np.array([value.encode("utf-8") for value in values], dtype=bytes)

    dtype = np.float64 if kind is float else np.int64
    return TrecTable(strings([row[0] for row in rows]), strings([row[1] for row in rows]),
                     np.array([row[2] for row in rows], dtype=dtype))


#: A file is read in parts of about this many bytes (cut at line ends), by one thread per CPU
#: (up to 4): each part's temporaries stay small enough to be reused from the heap and the cache.
#: 2 MiB, not 16: at 20,000 queries x 100 (a 61 MiB run) the read's peak resident memory fell from
#: 293 to 207 MiB, and its CPU time from 1.02 to 0.82 s.
PARALLEL_BYTES = 1 << 21


def _fast_table_in_parts(raw: bytes | mmap.mmap, columns: int, score_column: int | None) -> TrecTable | None:
    """`_fast_table` of a large file cut at line ends into parts of about `PARALLEL_BYTES`, read
    by threads (numpy releases the GIL), the rows joined in file order; None if any part is not
    regular."""
    import numpy as np

    parts = -(-len(raw) // PARALLEL_BYTES)
    cuts = [0]
    for k in range(1, parts):
        cut = raw.find(b"\n", max(cuts[-1], len(raw) * k // parts)) + 1
        if cut <= 0 or cut >= len(raw):
            break
        cuts.append(cut)
    if len(cuts) == 1:
        return _fast_table(raw, columns, score_column)
    from recall_kit.measure.score.parallel import in_threads

    view = memoryview(raw)
    pieces = [view[begin:end] for begin, end in zip(cuts, [*cuts[1:], len(raw)])]
    try:
        tables = in_threads(lambda piece: _fast_table(piece, columns, score_column), pieces)
    finally:
        with contextlib.suppress(BufferError):  # an array still viewing a piece: freed with it
            for piece in pieces:
                piece.release()
            view.release()
    if any(table is None for table in tables):
        return None
    if isinstance(raw, mmap.mmap) and hasattr(raw, "madvise"):
        # Every part is parsed: the file's pages leave this process's resident memory before the
        # parts are joined (the peak), rather than when the file is closed.
        raw.madvise(mmap.MADV_DONTNEED)
    return TrecTable(*(np.concatenate([getattr(table, name) for table in tables])  # type: ignore[union-attr]
                       for name in ("query_ids", "doc_ids", "values")))


def _fast_table(raw: bytes | mmap.mmap | memoryview, columns: int, score_column: int | None) -> TrecTable | None:
    """Parse a regular TREC file without a Python loop over its lines; None if it is not regular.

    Regular: every line holds exactly `columns` fields, each pair of fields separated by one space
    or tab, lines end in ``\\n``, no blank or comment line, UTF-8, every value parses. Anything
    else returns None and the exact reader takes over, so both readers always agree.
    """
    import numpy as np

    if len(raw) == 0 or raw[:3] == BOM:  # the exact reader refuses a BOM, naming the line
        return None
    buf, words = _padded(raw)
    separators = _separators(buf)
    if separators is not None and len(separators) and not _is_utf8(raw, buf):
        return None
    if separators is None or separators.size % columns:
        return None
    ends = separators.reshape(-1, columns)
    kinds = buf[ends]
    if not (kinds[:, -1] == 10).all():
        return None
    inner = kinds[:, :-1]
    if not ((inner == 32) | (inner == 9)).all():
        return None
    line_starts = np.empty(len(ends), dtype=ends.dtype)
    line_starts[0] = 0
    line_starts[1:] = ends[:-1, -1] + 1
    if (buf[line_starts] == ord("#")).any():
        return None

    def field(column: int) -> tuple[np.ndarray, np.ndarray]:
        starts = line_starts if column == 0 else ends[:, column - 1] + 1
        return _column_words(words, starts, ends[:, column] - starts), ends[:, column] - starts

    try:
        with np.errstate(all="ignore"):
            if score_column is not None:
                values = _parse_score_words(*field(score_column))
            else:
                grades = _as_strings(field(columns - 1)[0])
                if not _plain_integers(grades):  # "3.0", "1_0": the exact reader decides
                    return None
                values = grades.astype(np.int64)
    except (ValueError, OverflowError):
        return None
    if score_column is not None and np.isnan(values).any():
        return None
    return TrecTable(_as_strings(field(0)[0]), _as_strings(field(2)[0]), values)


def _padded(raw: bytes | mmap.mmap | memoryview) -> tuple[np.ndarray, np.ndarray]:
    """The file's bytes (a final ``\\n`` added where it lacks one) as uint8, and the same memory,
    zero-padded past the end, as big-endian 8-byte words (one copy of the file)."""
    import numpy as np

    size = len(raw)
    padded = np.zeros((size + 1) // 8 + 3, dtype=">u8")
    flat = padded.view(np.uint8)
    flat[:size] = np.frombuffer(raw, dtype=np.uint8)
    if flat[size - 1] != 10:
        flat[size] = 10
        size += 1
    return flat[:size], padded


_ALL = (1 << 64) - 1


def _column_words(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The byte strings at `starts` (`lengths` long) as big-endian uint64 words, zero-padded:
    shape (rows, ceil(longest / 8)), native uint64 whose order is the strings' byte order."""
    import numpy as np

    count = max(-(-int(lengths.max()) // 8), 1) if len(lengths) else 1
    out = np.empty((len(starts), count), dtype=np.uint64)
    index = starts >> 3
    shift = ((starts & 7) << 3).astype(np.uint64)
    back = np.uint64(64) - shift  # 64 where aligned: numpy shifts by >= 64 give 0
    for k in range(count):
        word = np.take(words, index, mode="clip").astype(np.uint64) << shift  # past the end: masked off
        word |= np.take(words, index + 1, mode="clip").astype(np.uint64) >> back
        kept = np.clip(lengths - 8 * k, 0, 8).astype(np.uint64) << np.uint64(3)
        word &= ~(np.uint64(_ALL) >> kept)
        out[:, k] = word
        index += 1
    return out


def _as_strings(words: np.ndarray) -> np.ndarray:
    """`_column_words`'s words as a numpy bytes array (dtype ``S``; trailing zeros are padding)."""
    return words.astype(">u8").view(f"S{8 * words.shape[1]}").ravel()


def _parse_score_words(words: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """float() of each score, exactly: plain decimals of up to 8 characters (``-12.375``) are
    read eight bytes at a time; the others go through `_parse_floats`.

    A plain decimal's digits make an integer m below 10**8, its fraction digits f: m / 10**f is
    one correctly rounded division of exact doubles, bit for bit what float() gives.
    """
    import numpy as np

    word = words[:, 0].copy()
    chars = word.astype(">u8").view(np.uint8).reshape(-1, 8)  # column 0: the first character
    digit = (chars - np.uint8(ord("0"))) <= 9
    point = chars == ord(".")
    negative = chars[:, 0] == ord("-")
    allowed = digit | point | (chars == 0)
    allowed[:, 0] |= negative

    def per_row(mask: np.ndarray) -> np.ndarray:  # a row's 8 booleans as one integer: 0x01 per true
        return mask.view(np.uint64).ravel()

    one_each = np.uint64(0x0101010101010101)
    points = np.bitwise_count(per_row(point))
    digits = np.bitwise_count(per_row(digit)).astype(np.uint64)
    plain = (per_row(allowed) == one_each) & (points <= 1) & (digits >= 1) & (lengths <= 8)
    sign = negative.astype(np.uint64)
    word <<= sign << np.uint64(3)  # the minus sign leaves
    # the point's column (8 where there is none): the bits below its 0x01 byte, counted, / 8
    at = np.bitwise_count(per_row(point) - np.uint64(1)).astype(np.uint64) >> np.uint64(3)
    at = np.where(points == 1, at - sign, np.uint64(8))
    head = ~(np.uint64(_ALL) >> (at << np.uint64(3)))  # the bytes before the point
    word = (word & head) | ((word << np.uint64(8)) & ~head)  # the point leaves
    word >>= np.uint64(64) - (digits << np.uint64(3))  # right-aligned digits
    word &= np.uint64(0x0F0F0F0F0F0F0F0F)
    word = ((word >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(10) + (word & np.uint64(0x00FF00FF00FF00FF))
    word = ((word >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)) * np.uint64(100) + (word & np.uint64(0x0000FFFF0000FFFF))
    word = (word >> np.uint64(32)) * np.uint64(10000) + (word & np.uint64(0xFFFFFFFF))
    fraction = np.where(points == 1, lengths - sign.astype(np.int64) - 1 - at.astype(np.int64), 0)
    values = word.astype(np.float64) / np.array([10.0**i for i in range(9)])[np.clip(fraction, 0, 8)]
    values = np.where(negative, -values, values)
    if not plain.all():  # longer or other syntax: the general parser, on those rows only
        values[~plain] = _parse_floats(_as_strings(words[~plain]))
    return values


_CHUNK = 1 << 23  # bytes per step: small temporaries are reused, where file-sized ones cost page faults


def _is_utf8(raw: bytes | mmap.mmap | memoryview, buf: np.ndarray) -> bool:
    if len(buf) == 0 or int(buf.max()) < 128:  # ASCII; max() makes no file-sized temporary
        return True
    try:
        bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _separators(buf: np.ndarray) -> np.ndarray | None:
    """Positions of the whitespace bytes (<= 32) in `buf`, or None where two are adjacent or
    the first byte is one (a blank line, a blank field, or indentation)."""
    import numpy as np

    index = np.int32 if len(buf) < 2**31 else np.int64
    parts = []
    previous_blank = True  # a file may not start with whitespace
    for begin in range(0, len(buf), _CHUNK):
        blank = buf[begin : begin + _CHUNK] <= 32
        if (previous_blank and blank[0]) or (blank[1:] & blank[:-1]).any():
            return None
        previous_blank = bool(blank[-1])
        parts.append((np.flatnonzero(blank) + begin).astype(index))
    return np.concatenate(parts)


def _plain_integers(strings: np.ndarray) -> bool:
    """Whether every string is an optional sign and ASCII digits (what the exact reader reads
    the same way), so that numpy's int() conversion cannot accept more (such as "1_0")."""
    import numpy as np

    chars = strings.view(np.uint8).reshape(len(strings), strings.dtype.itemsize)
    allowed = ((chars >= ord("0")) & (chars <= ord("9"))) | (chars == 0)
    allowed[:, 0] |= (chars[:, 0] == ord("+")) | (chars[:, 0] == ord("-"))
    return bool(allowed.all())


def _parse_floats(strings: np.ndarray) -> np.ndarray:
    """float() of each numpy bytes string, exactly, vectorised for plain decimals.

    A plain decimal (``-12.375``: optional minus, digits, at most one point, at most 15 digits)
    is its digits as an integer m, exact in a double, divided by 10**f, also exact (f <= 15):
    one correctly rounded division, hence bit for bit what float() gives (Clinger's fast path).
    Other strings (exponents, long mantissas, inf) go through `parse_score`; one it refuses raises
    ValueError, so the exact reader names its line.
    """
    import numpy as np

    width = strings.dtype.itemsize
    count = len(strings)
    chars = strings.view(np.uint8).reshape(count, width)
    negative = chars[:, 0] == ord("-")
    mantissa = np.zeros(count, dtype=np.int64)
    digits = np.zeros(count, dtype=np.int16)
    fraction = np.zeros(count, dtype=np.int16)
    points = np.zeros(count, dtype=np.int16)
    seen_point = np.zeros(count, dtype=bool)
    other = np.zeros(count, dtype=bool)
    for offset in range(width):
        char = chars[:, offset]
        value = char - np.uint8(ord("0"))  # wraps below '0': only digits are <= 9
        is_digit = value <= 9
        is_point = char == ord(".")
        np.multiply(mantissa, 10, out=mantissa, where=is_digit)
        np.add(mantissa, value, out=mantissa, where=is_digit)
        digits += is_digit
        fraction += is_digit & seen_point
        points += is_point
        seen_point |= is_point
        allowed = is_digit | is_point | (char == 0)
        if offset == 0:
            allowed |= negative
        other |= ~allowed
    plain = ~other & (points <= 1) & (digits >= 1) & (digits <= 15)
    values = mantissa / 10.0 ** fraction
    values = np.where(negative, -values, values)
    if not plain.all():  # exponents, long mantissas, inf: few, and checked as the exact reader does
        parsed = [parse_score(text.decode("utf-8", "replace")) for text in strings[~plain].tolist()]
        if any(value is None for value in parsed):
            raise ValueError("a score outside trec_eval's number syntax")
        values[~plain] = parsed
    return values


def check_token(kind: str, value: str) -> str:
    """`value` as one whitespace-free field of a TREC (or BEIR) line; DatasetError otherwise."""
    value = str(value)
    if not value or any(character.isspace() for character in value):
        raise DatasetError(f"{kind} {value!r} is empty or has whitespace: it cannot be written to a TREC or BEIR file")
    return value


def write_run(path: Path | str, rankings: Mapping[str, Sequence[Hit]], tag: str) -> None:
    """Write rankings as a TREC run, ``qid Q0 docid rank score tag``, atomically.

    Each ranking is written in trec_eval's order (`sort_hits`), ranks from 1, scores with
    ``repr`` so they read back exactly, so the file scores the same everywhere.
    """
    tag = check_token("run tag", tag)

    def lines() -> Iterator[str]:
        for query_id, hits in rankings.items():
            query_id = check_token("query id", query_id)
            for rank, hit in enumerate(sort_hits(hits), start=1):
                doc_id = check_token("document id", hit.id)
                yield f"{query_id} Q0 {doc_id} {rank} {float(hit.score)!r} {tag}\n"

    with atomic_open(path) as stream:
        stream.writelines(lines())


def write_qrels(path: Path | str, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write judgments as TREC qrels, ``qid 0 docid grade``, atomically."""

    def lines() -> Iterator[str]:
        for query_id, judged in qrels.items():
            query_id = check_token("query id", query_id)
            for doc_id, grade in judged.items():
                yield f"{query_id} 0 {check_token('document id', doc_id)} {int(grade)}\n"

    with atomic_open(path) as stream:
        stream.writelines(lines())
