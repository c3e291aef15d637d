"""The fuzz harness: one `Target` per reader, the contract every case is held to, and the two ways
the targets run (a short derandomized run in `make test`, a timed run in `make fuzz`).

The contract, and nothing more: a valid input gives the reference reading (what the strategy built
the input from); any input gives either a reading or the project's one-line error (a
`RecallKitError`; the remote answers' `QueryFailed`, which becomes a failed query's one-line
reason); never another exception, never longer than `TIME_CAP` seconds (a hang: an alarm stops it),
never more than `MEMORY_CAP` bytes allocated at once (tracemalloc's peak) on inputs of a few KB."""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recall_kit.errors import RecallKitError

#: Seconds one example may take (the harness's deadline: an alarm ends a hang; generous, as the
#: machines that run the suite are shared and a reader's first call imports its modules).
TIME_CAP = 10.0
#: Bytes one example may allocate at its peak (tracemalloc): the inputs are a few KB.
MEMORY_CAP = 64 * 1024 * 1024


class Hang(Exception):  # noqa: N818 - what it is
    """An example ran past `TIME_CAP`."""


@dataclass(frozen=True)
class Case:
    """The files of one input (name -> bytes) and, for a valid one, the reference reading."""

    files: tuple[tuple[str, bytes], ...]
    expected: Any = None
    valid: bool = False

    def __repr__(self) -> str:  # what hypothesis prints for a failing example: paste it into @example
        return f"Case(files={self.files!r}, expected={self.expected!r}, valid={self.valid!r})"


def valid(files: dict[str, bytes], expected: Any) -> Case:
    return Case(tuple(files.items()), expected, True)


def unknown(files: dict[str, bytes]) -> Case:
    return Case(tuple(files.items()))


@dataclass
class Target:
    """One reader under fuzzing: what builds valid-looking inputs, how the reader is called (on the
    folder the case's files are written into), and the errors that are its one-line refusals."""

    name: str
    #: What it reads, for docs/reliability.md.
    reads: str
    #: Valid inputs, each with its reference reading.
    valid: st.SearchStrategy[Case]
    #: The reader: the folder holding the case's files -> a reading comparable with `Case.expected`.
    read: Callable[[Path], Any]
    #: The files a raw-bytes case writes (random bytes each).
    names: Sequence[str]
    errors: tuple[type[BaseException], ...] = (RecallKitError,)
    #: Kept findings of the long runs (each one failed before its fix): replayed on every run.
    examples: list[Case] = field(default_factory=list)
    #: Modules the reader imports, imported before the first case (an import is not a hang).
    imports: Sequence[str] = ()
    #: Examples tried by `check` (the timed run's count).
    tried: int = 0

    def cases(self) -> st.SearchStrategy[Case]:
        """Valid inputs, the same mutated (bytes cut, inserted, replaced, lines doubled), and raw bytes."""
        raw = st.tuples(*[st.binary(max_size=400) for _ in self.names]).map(
            lambda blobs: unknown(dict(zip(self.names, blobs, strict=True))))
        return st.one_of(self.valid, mutated(self.valid, self.names), reshaped(self.valid, self.names), raw)

    def check(self, case: Case) -> None:
        """Hold one case to the contract (an AssertionError, or the stray exception, when it breaks)."""
        self.tried += 1
        root = Path(tempfile.mkdtemp(prefix="recall-kit-fuzz-"))
        try:
            for name, data in case.files:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(data)
            started = time.perf_counter()
            with _measured() as peak:
                try:
                    got = self.read(root)
                except self.errors as error:
                    message = str(error)
                    assert not case.valid, f"{self.name}: a valid input was refused: {message}"
                    assert message.strip() and "\n" not in message, f"{self.name}: not one line: {message!r}"
                    assert len(message) <= 2000, f"{self.name}: a message of {len(message)} characters"
                    got = None
            elapsed = time.perf_counter() - started
            assert elapsed <= TIME_CAP, f"{self.name}: {elapsed:.1f} s on one example"
            assert peak() <= MEMORY_CAP, f"{self.name}: {peak() / 2**20:.0f} MiB at the peak"
            if case.valid:
                assert got == case.expected, f"{self.name}: read {got!r}, the reference reading is {case.expected!r}"
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def property(self, max_examples: int, derandomize: bool) -> Callable[[], None]:
        """The hypothesis test of this target: `max_examples` cases plus the kept examples."""

        import importlib

        for module in self.imports:
            importlib.import_module(module)

        def one(case: Case) -> None:
            self.check(case)

        test: Callable[..., None] = given(case=self.cases())(one)
        for kept in self.examples:
            test = example(case=kept)(test)
        return settings(max_examples=max_examples, derandomize=derandomize, database=None, deadline=None,
                        suppress_health_check=list(HealthCheck), print_blob=False)(test)


@contextmanager
def _measured() -> Iterator[Callable[[], int]]:
    """Run the block under an alarm at TIME_CAP seconds; yield what its allocation peak was (when
    tracemalloc traces: `make fuzz` has it trace, the suite's short run does not, for time)."""
    tracing = tracemalloc.is_tracing()
    base = tracemalloc.get_traced_memory()[0] if tracing else 0
    if tracing:
        tracemalloc.reset_peak()
    peak = [0]

    def ring(signum: int, frame: Any) -> None:
        raise Hang(f"no reading within {TIME_CAP:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, TIME_CAP)
    try:
        yield lambda: peak[0]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        peak[0] = tracemalloc.get_traced_memory()[1] - base if tracing else 0


# -- mutations of a valid input -----------------------------------------------------------------

EDIT = st.tuples(st.sampled_from(["cut", "insert", "replace", "double", "truncate"]), st.floats(0, 1),
                 st.integers(1, 40), st.binary(min_size=1, max_size=12)
                 | st.sampled_from([b"\n", b"\t", b" ", b"#", b"\x00", b"\xff", b"\xef\xbb\xbf", b'"', b"{", b"[",
                                    b"]", b"}", b",", b":", b"=", b"-", b"1e999", b"NaN", b"\\ud800", b"9" * 400]))


def mutated(cases: st.SearchStrategy[Case], names: Sequence[str]) -> st.SearchStrategy[Case]:
    """A valid case with one to four edits in one of its files `names` (its validity then unknown)."""

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        case = draw(cases)
        files = dict(case.files)
        name = draw(st.sampled_from(sorted(set(files) & set(names))))
        data = files[name]
        for kind, where, span, blob in draw(st.lists(EDIT, min_size=1, max_size=4)):
            data = edit(data, kind, where, span, blob)
        files[name] = data
        return unknown(files)

    return build()


#: Values a valid input's value is replaced by (JSON and TOML alike; None is dropped from TOML).
HOSTILE = st.sampled_from([None, True, False, 0, -1, 4, 1.5, 1e308, -1e308, 10**30, -(10**30), "", " ", "nan",
                           "NaN", "inf", "1e999", "0.5", "x" * 600, "\n", "a\tb", "\u2028", "\x00", "\ud800", "..",
                           "/etc", [], {}, [[]], {"": None}, [1, "1", 1.0], float("nan"), float("inf")])
#: Fields a TREC line's field is replaced by.
HOSTILE_FIELD = st.sampled_from(["nan", "NaN", "inf", "-inf", "1e999", "-0", "3.5", "1_0", "0x10", "#x", "é", "\x00",
                                 "9" * 400, "1e-400", "+1", "--1", "١", "1.", ".5", "1e5", "2147483648"])


def reshaped(cases: st.SearchStrategy[Case], names: Sequence[str]) -> st.SearchStrategy[Case]:
    """A valid case with one value of one of its files replaced by a hostile one, or a key dropped,
    or a row doubled, as the file's format writes it (JSON lines, JSON, TOML, TREC fields)."""

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        case = draw(cases)
        files = dict(case.files)
        name = draw(st.sampled_from(sorted(set(files) & set(names))))
        try:
            files[name] = _reshape(draw, name, files[name])
        except (ValueError, TypeError, RecursionError):  # a file the format's own writer cannot write back
            pass
        return unknown(files)

    return build()


def _reshape(draw: st.DrawFn, name: str, data: bytes) -> bytes:
    import json
    import tomllib

    if name.endswith(".txt"):
        lines = data.decode("utf-8").split("\n")
        index = draw(st.integers(0, max(len(lines) - 1, 0)))
        fields = lines[index].split()
        if fields:
            fields[draw(st.integers(0, len(fields) - 1))] = draw(HOSTILE_FIELD)
            lines[index] = " ".join(fields)
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    if name.endswith(".jsonl"):
        rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        if not rows:
            return data
        index = draw(st.integers(0, len(rows) - 1))
        if draw(st.integers(0, 4)) == 0:
            rows.insert(index, rows[index])  # a row twice
        else:
            rows[index] = _replace(draw, rows[index])
        return "".join(json.dumps(row) + "\n" for row in rows).encode()
    if name.endswith(".toml"):
        from fuzz.targets import toml

        return toml(_replace(draw, tomllib.loads(data.decode("utf-8")), toml=True))
    return json.dumps(_replace(draw, json.loads(data))).encode()


def _replace(draw: st.DrawFn, value: Any, toml: bool = False) -> Any:
    """`value` with one node (anywhere in it) replaced by a hostile value, or one key dropped."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value, key=str)))
        if draw(st.integers(0, 3)) == 0:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: _replace(draw, value[key], toml)}
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], _replace(draw, value[index], toml), *value[index + 1:]]
    new = draw(HOSTILE)
    if toml and (new is None or (isinstance(new, int) and abs(new) >= 2**63) or (isinstance(new, dict) and None in new.values())):
        return "null"
    return new


def edit(data: bytes, kind: str, where: float, span: int, blob: bytes) -> bytes:
    at = int(where * len(data))
    if kind == "cut":
        return data[:at] + data[at + span:]
    if kind == "insert":
        return data[:at] + blob + data[at:]
    if kind == "replace":
        return data[:at] + blob + data[at + len(blob):]
    if kind == "truncate":
        return data[:at]
    lines = data.split(b"\n")  # double: a line written twice
    index = int(where * len(lines)) % max(len(lines), 1)
    return b"\n".join([*lines[:index + 1], *lines[index:]])


# -- the two runs ---------------------------------------------------------------------------------

def run_for(target: Target, seconds: float, batch: int = 100) -> tuple[int, float, str | None]:
    """Run `target` on fresh random cases for about `seconds`: (examples tried, seconds, the first
    failure's report or None)."""
    test = target.property(batch, derandomize=False)  # imports the reader's modules: not counted
    target.tried = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            test()
        except Exception as error:  # noqa: BLE001 - hypothesis's report of the falsifying example
            import traceback

            return target.tried, time.monotonic() - started, "".join(traceback.format_exception(error))
    return target.tried, time.monotonic() - started, None
