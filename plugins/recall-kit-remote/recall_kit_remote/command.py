"""The `command` retriever: a program started once, spoken to in JSON lines on its stdin and stdout
(the protocol is in docs/live-systems.md; any language can speak it)."""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

from recall_kit.plugin import Corpus, Hit, PluginRunError, debug_enabled, mask_secrets
from recall_kit_remote.base import (
    AnswerMisread,
    AnswerOptions,
    QueryFailed,
    RemoteRetriever,
    fill_template,
    parse_template,
    select,
    split_command_line,
)

#: How long a program may take to start answering, and to index the corpus it was handed.
INDEX_TIMEOUT_SECONDS = 600.0
#: The query line when no `request` template is given.
DEFAULT_REQUEST = '{"query_id": "{query_id}", "text": "{text}", "k": "{k}"}'


def memory_message(corpus: Corpus) -> dict[str, Any]:
    """The optional first message: every memory's id and fields, for the program to index."""
    return {"corpus": [
        {"id": memory.id, "content": memory.content, "category": memory.category, "tags": list(memory.tags),
         "expanded_keywords": memory.expanded_keywords, "importance": memory.importance,
         "scope": memory.scope, "created_at": memory.created_at}
        for memory in corpus
    ]}


class CommandRetriever(RemoteRetriever):
    """Starts `argv` once and writes one JSON line per query, `{"query_id": ..., "text": ..., "k":
    ...}`; the program answers one line, `{"query_id": ..., "hits": [{"id": ..., "score": ...}]}`
    (or `{"query_id": ..., "error": "..."}`). With `send_corpus`, the first line is
    `{"corpus": [...memories...]}` and the program answers `{"indexed": N}` before any query.
    A program with its own shapes is spoken to through the `request` template and read through
    the `results`, `id`, `score` and `answer_id` paths.
    """

    description = "a program you run, spoken to in JSON lines (query in, hits out)"

    @dataclass(frozen=True)
    class Options(AnswerOptions):
        #: The program and its arguments, as a shell would split them (required).
        argv: str = ""
        #: Send the corpus as the first message (else the program holds its own store).
        send_corpus: bool = False
        #: The query line as a JSON template ({query_id}, {text}, {k}, {scope}).
        request: str = DEFAULT_REQUEST
        #: Path to the query id echoed in an answer (empty: each line answers the last question).
        answer_id: str = "query_id"
        # The shared options whose defaults differ here: hits under "hits", two asks a query, and
        # one question at a time (the program reads one line, then answers it).
        results: str = "hits"
        tries: int = 2
        concurrency: int = 1

        def __post_init__(self) -> None:
            if not split_command_line(self.argv, "command.argv"):
                raise ValueError('argv must name the program to run, e.g. -o command.argv="python my_search.py"')
            super().__post_init__()
            parse_template(self.request, "command.request", frozenset({"query_id", "text", "k", "scope"}))

    options: CommandRetriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: IO[str] | None = None
        self._next_id = 0
        self._lock = threading.Lock()
        self._scope: str | None = None
        self._reading = self.options.text_reading("command")
        # Handed the corpus, the program searches that and nothing else: an id outside it is a
        # broken answer (the run ends naming it), not a memory of a store of its own.
        self.searches_own_store = not self.options.send_corpus

    # -- the program's life ------------------------------------------------------------------------

    def _shown(self) -> str:
        """The command line as messages quote it: secrets (`--api-key PW`) masked."""
        return repr(mask_secrets(self.options.argv))

    def build_index(self, corpus: Corpus) -> None:
        self.close()
        self._scope = corpus[0].scope if len(corpus) else None
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._lines = queue.Queue()
        try:
            self._process = subprocess.Popen(
                shlex.split(self.options.argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr, text=True, encoding="utf-8", bufsize=1, env=dict(os.environ),
            )
        except OSError as error:
            raise PluginRunError(f"Cannot start command {self._shown()}: {error.strerror or type(error).__name__}.") from None
        stdout = self._process.stdout
        assert stdout is not None  # noqa: S101 - Popen with stdout=PIPE always has one
        threading.Thread(target=self._read, args=(stdout,), daemon=True).start()
        if self.options.send_corpus:
            self._write(memory_message(corpus))
            try:
                answer = self._answer(INDEX_TIMEOUT_SECONDS, "indexing the corpus")
            except QueryFailed as failure:
                raise PluginRunError(f"Command {self._shown()}: {failure}.") from None
            if answer is None or "indexed" not in answer:
                raise PluginRunError(f"Command {self._shown()} did not answer the corpus message "
                                     'with {"indexed": N}.')

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _died(self) -> PluginRunError:
        """The program exited: one line with its status. Its stderr may quote queries and memories,
        so it is named, not printed (its last line under --debug)."""
        process = self._process
        status: int | None = None
        if process is not None:
            try:
                status = process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                status = None
        last = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
            last = lines[-1] if lines else ""
        if not last:
            said = "; nothing on stderr"
        elif debug_enabled():
            said = f"; last stderr line: {mask_secrets(last)}"
        else:
            said = ("; it wrote to stderr (not shown: it may quote queries or memories; run 'recall-kit --debug "
                    "eval ...' to show its last line)")
        how = f"exited with status {status}" if status is not None else "closed its output"
        return PluginRunError(f"Command {self._shown()} {how} during the run{said}")

    def _write(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise PluginRunError("command: search before build_index.")
        try:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def _answer(self, timeout: float, what: str, configured: float | None = None) -> dict[str, Any] | None:
        """The next line the program writes, parsed; None when it is not a JSON object. A wait
        cut short by a deadline says the `configured` timeout, not what was left of it."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            said = timeout if configured is None else configured
            raise QueryFailed(f"no answer within {said:g} s while {what}") from None
        if line is None:
            raise self._died()
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            return None
        return answer if isinstance(answer, dict) else None

    # -- queries -----------------------------------------------------------------------------------

    def ask(self, query: str, k: int) -> list[Hit]:
        with self._lock:  # one conversation: a question, then its answer
            self._next_id += 1
            query_id = str(self._next_id)
            started = time.perf_counter()
            options = self.options
            try:
                values = {"query_id": query_id, "text": query, "k": k, "scope": self._scope}
                self._write(fill_template(json.loads(options.request), values))
                deadline = started + options.timeout
                while True:  # answers to earlier, timed-out questions are skipped
                    answer = self._answer(max(0.0, deadline - time.perf_counter()), "answering a query",
                                          options.timeout)
                    if answer is None:
                        raise AnswerMisread("the answer is not a JSON object")
                    if not options.answer_id or _echoed(answer, options.answer_id) == query_id:
                        break
            finally:
                self.waited(started)
        if "error" in answer:
            raise QueryFailed("the program answered with an error")
        return options.read_answer(answer, "command", self._reading)

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _echoed(answer: dict[str, Any], path: str) -> str | None:
    """The query id an answer echoes at `path` (None: it echoes none)."""
    try:
        return str(select(answer, path))
    except QueryFailed:
        return None
