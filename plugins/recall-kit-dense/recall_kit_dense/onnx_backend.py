"""The dense path on ONNX Runtime (`-o dense.backend=onnx`, and `auto` on a CPU): memories and
queries embedded by the model's fp32 ONNX export (`onnx_export`, made once from its own weights)
with onnxruntime and tokenizers, as fastembed does: no torch, no transformers, once exported.

Tokenization, pooling and normalisation are sentence-transformers' own: each text (prompt first)
lower-cased where the model says so, cut at the model's window, padded per batch; mean
pooling over the attention mask (or the CLS token), then unit length. int8 dynamic quantisation of
the query model on request (`-o dense.quantize=true`); the memories stay fp32.

Needs onnxruntime and tokenizers (dependencies of recall-kit-dense).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit_dense.errors import DenseModelError
from recall_kit_dense.models import LoadedModel, ModelSource, weights_signature

#: Bumped when the quantisation recipe changes (a new file name: an old int8 file is not reused).
QUANTIZE_FORMAT = 2
_QUANTIZE_LOCK = threading.Lock()
#: The most texts one ONNX Runtime run embeds, whatever batch size is asked (a smaller one is
#: kept): long texts in big batches spill the attention's intermediates out of the CPU's caches.
#: Measured on the Intel Xeon (2 threads, all-MiniLM-L6-v2, best of 2): LoCoMo's context-expanded
#: turns (153, 109 tokens on average) 5.41 s in runs of 64, 3.57 s of 32, 2.49 s of 16, 2.09 s of
#: 8, 2.36 s of 4; the example's 340 memories 1.50 s -> 1.15 s (docs/performance.md).
RUN_BATCH = 8
_LOADED: dict[tuple[Any, ...], LoadedModel] = {}
_LOADED_LOCK = threading.Lock()
#: Models already said to stay on torch in this process (said once each).
_SAID: set[str] = set()


def runtime_available() -> bool:
    """Whether onnxruntime and tokenizers can be imported (found, not imported)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None and find_spec("tokenizers") is not None


def _require_runtime() -> Any:
    # Set before the import: onnxruntime's telemetry otherwise writes a session file (.ses) into TMPDIR.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        import onnxruntime
    except ImportError:
        raise DenseModelError(
            "dense.backend=onnx needs ONNX Runtime: pip install onnxruntime tokenizers "
            "(or use -o dense.backend=torch)."
        ) from None
    return onnxruntime


class OnnxModel:
    """An exported model loaded for embedding: a tokenizer, and ONNX Runtime sessions made on
    first use, one per (file, intra-op thread count)."""

    def __init__(self, folder: Path, manifest: dict[str, Any], threads: int = 1,
                 max_seq_length: int | None = None) -> None:
        from tokenizers import Tokenizer

        from recall_kit_dense.onnx_export import TOKENIZER_FILE

        self.folder = folder
        self.settings = manifest
        self.threads = threads
        self.max_seq_length = max_seq_length or manifest.get("max_seq_length")
        self._pooling = str(manifest["pooling"])
        self._lower_case = bool(manifest.get("do_lower_case"))
        self._inputs = list(manifest["input_names"])
        # Cut at the window as the fast tokenizer's `longest_first` does for one text (special
        # tokens kept); padded here, per batch.
        self._tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self._tokenizer.no_padding()
        if self.max_seq_length is None:
            self._tokenizer.no_truncation()
        else:
            self._tokenizer.enable_truncation(int(self.max_seq_length))
        self._sessions: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def new_counter(self) -> Any:
        """A copy of the tokenizer, untruncated and unpadded, for counting tokens
        (`models.counting_tokenizer`, on first use: a warm eval never counts)."""
        from tokenizers import Tokenizer

        from recall_kit_dense.onnx_export import TOKENIZER_FILE

        counter = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
        counter.no_truncation()
        counter.no_padding()
        return counter

    def session(self, path: Path, threads: int) -> Any:
        """The ONNX Runtime session of `path` on `threads` intra-op threads (made once: `_shared_session`)."""
        key = (str(path), threads)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = _shared_session(path, threads)
            return self._sessions[key]

    def model_path(self, quantize: bool = False) -> Path:
        """The fp32 export, or its int8 quantisation (made on first use, atomically)."""
        from recall_kit_dense.onnx_export import MODEL_FILE

        exported = self.folder / MODEL_FILE
        if not quantize:
            return exported
        wanted = self.folder / f"model-q{QUANTIZE_FORMAT}-int8.onnx"
        with _QUANTIZE_LOCK:
            if not wanted.is_file():
                _quantize(exported, wanted)
        return wanted

    def encode(self, texts: list[str], prompt: str = "", batch_size: int = 64, threads: int | None = None,
               quantize: bool = False, watch: Any = None) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text (`prompt` put before each), in batches
        of `batch_size` texts (at most `RUN_BATCH`) taken longest first (padding is per batch, as
        sentence-transformers does), on `threads` intra-op threads (default: the model's). `watch` (truncation.Watch)
        is told each batch's texts and attention mask."""
        dimension = int(self.settings["dimension"])
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        session = self.session(self.model_path(quantize), threads or self.threads)
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for rows, batch, _, feed in self._runs([prompt + text for text in texts], batch_size):
            if watch is not None:
                watch.note(batch, None, {"attention_mask": feed["attention_mask"]})
            out[rows] = self._pool(session.run(None, {name: feed[name] for name in self._inputs})[0],
                                   feed["attention_mask"])
        return out

    def token_vectors(self, texts: list[str], batch_size: int = 64,
                      threads: int | None = None) -> list[tuple[np.ndarray, list[str]]]:
        """Each text's contextual token vectors (float32, the model's last hidden state, one row
        per token the attention mask keeps, special tokens included) and its tokens, as
        sentence-transformers' `encode(output_value=None)` gives them; in `encode`'s runs."""
        return self.read(texts, batch_size, threads)[1]

    def read(self, texts: list[str], batch_size: int = 64,
             threads: int | None = None) -> tuple[np.ndarray, list[tuple[np.ndarray, list[str]]]]:
        """Each text's embedding (as `encode(texts, "", batch_size)` gives it: the same runs, the
        same pooling) and its token vectors (as `token_vectors`), from one forward pass: a judge
        that compares both reads each text once (the example study's judge: 1.6 s of 13 s saved)."""
        dimension = int(self.settings["dimension"])
        pooled = np.empty((len(texts), dimension), dtype=np.float32)
        out: list[tuple[np.ndarray, list[str]]] = [(np.zeros((0, 0), dtype=np.float32), [])] * len(texts)
        if not texts:
            return pooled, out
        session = self.session(self.model_path(), threads or self.threads)
        for rows, _, encodings, feed in self._runs(list(texts), batch_size):
            hidden = session.run(None, {name: feed[name] for name in self._inputs})[0]
            pooled[rows] = self._pool(hidden, feed["attention_mask"])
            for position, (row, encoding) in enumerate(zip(rows, encodings, strict=True)):
                out[row] = (np.ascontiguousarray(hidden[position, :len(encoding)], dtype=np.float32),
                            list(encoding.tokens))
        return pooled, out

    def _runs(self, texts: list[str], batch_size: int) -> Iterator[tuple[list[int], list[str], list[Any],
                                                                        dict[str, np.ndarray]]]:
        """The runs that embed `texts` (lower-cased where the model says so): longest first, at most
        `min(batch_size, RUN_BATCH)` a run; each run's row numbers in `texts`, its texts, their
        encodings and the padded arrays."""
        if self._lower_case:
            texts = [text.lower() for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        step = min(batch_size, RUN_BATCH)
        for start in range(0, len(order), step):
            rows = order[start:start + step]
            batch = [texts[i] for i in rows]
            encodings = self._tokenizer.encode_batch(batch, add_special_tokens=True)
            yield rows, batch, encodings, self._arrays(encodings)

    def _feed(self, texts: list[str]) -> dict[str, np.ndarray]:
        """input_ids, attention_mask and token_type_ids of `texts`, cut at the window, padded."""
        return self._arrays(self._tokenizer.encode_batch(texts, add_special_tokens=True))

    def _arrays(self, encodings: list[Any]) -> dict[str, np.ndarray]:
        """The padded arrays of tokenized texts."""
        width = max(len(encoding) for encoding in encodings)
        ids = np.full((len(encodings), width), int(self.settings.get("pad_id") or 0), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.full((len(encodings), width), int(self.settings.get("pad_type_id") or 0), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding)
            ids[row, :length] = encoding.ids
            mask[row, :length] = encoding.attention_mask
            types[row, :length] = encoding.type_ids
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    def _pool(self, hidden: np.ndarray, attention: np.ndarray) -> np.ndarray:
        if self._pooling == "cls":
            vectors = hidden[:, 0]
        else:
            mask = attention[..., None].astype(np.float32)
            vectors = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.clip(norms, 1e-12, None), dtype=np.float32)


#: The sessions this process holds, by their model file's identity (device, inode, size, time of
#: its last change) and thread count, while a model holds them: an export linked into another
#: cache folder (`onnx_export.copy_seen`) is the same file, read once (MiniLM: 0.15-0.4 s of CPU a
#: session). A file changed or replaced is another identity, so a new session reads it.
_SHARED: weakref.WeakValueDictionary[tuple[int, int, int, int, int], Any] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _shared_session(path: Path, threads: int) -> Any:
    """The session of the model file `path` on `threads` intra-op threads, shared with every model of
    this process that reads the same file."""
    runtime = _require_runtime()
    stat = path.stat()
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, threads)
    with _SHARED_LOCK:
        session = _SHARED.get(identity)
        if session is None:
            options = runtime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            # Its threads sleep between batches rather than spin: on a shared machine (two test
            # workers, a study beside a browser) spinning took CPU from the other work. The
            # example study, one core busy beside it: 22.3 s -> 18.6 s (24.8 -> 19.8 s of CPU);
            # quiet, the same 13.9 s (docs/performance.md). The numbers do not change.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = _inference_session(runtime, path, options)
            _SHARED[identity] = session
        return session


def _inference_session(runtime: Any, path: Path, options: Any) -> Any:
    """A session of `path` at ONNX Runtime's full optimisation level, read from the graph's rewrite
    (`_rewritten`) where there is one: the same kernels on the same fused graph, so the same
    numbers, made in 0.05 s rather than 0.08 s (all-MiniLM-L6-v2, docs/performance.md)."""
    providers = ["CPUExecutionProvider"]
    rewritten = _rewritten(runtime, path)
    if rewritten is not None:
        try:
            return runtime.InferenceSession(str(rewritten), options, providers=providers)
        except Exception:  # noqa: BLE001 - an unreadable rewrite: the export itself, rewritten again next time
            rewritten.unlink(missing_ok=True)
    return runtime.InferenceSession(str(path), options, providers=providers)


def _rewritten(runtime: Any, path: Path) -> Path | None:
    """`path` as ONNX Runtime rewrites it at its extended level (attention, layer norms and GELU
    fused; no layout meant for one CPU), saved once beside it, atomically, named by the runtime's
    version (another version's is removed); None when it cannot be written (the export is used)."""
    target = path.with_name(f"{path.stem}.ort-{runtime.__version__}.onnx")
    if target.is_file():
        return target
    partial = path.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
    options = runtime.SessionOptions()
    options.graph_optimization_level = runtime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(partial)
    try:
        runtime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        os.replace(partial, target)
    except Exception:  # noqa: BLE001 - a read-only cache or a full disk: the export serves as it is
        return None
    finally:
        partial.unlink(missing_ok=True)
    for old in path.parent.glob(f"{path.stem}.ort-*.onnx"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


def _quantize(source: Path, path: Path) -> None:
    """Dynamic quantisation: weights as unsigned 8-bit integers (per tensor), activations
    quantised at run time. Unsigned weights kept recall@10 closest to torch's of the recipes
    tried (docs/performance.md): signed int8 weights moved it by +0.006 on examples/memories."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = path.with_name(f".{path.name}.{os.getpid()}.partial.onnx")
    try:
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QUInt8)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def load_onnx_model(source: ModelSource, max_seq_length: int | None, threads: int,
                    allow_download: bool = False, trust_remote_code: bool = False) -> LoadedModel | None:
    """The model at `source` on ONNX Runtime, exported on first use (that once, through
    sentence-transformers and torch); None, said once on stderr, when it cannot be exported."""
    _require_runtime()
    from recall_kit_dense.onnx_export import OnnxExportError, export_folder, read_manifest, remember

    signature = weights_signature(source.folder)
    folder = export_folder(source, signature)
    key = (str(folder), max_seq_length, threads)
    with _LOADED_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        manifest = read_manifest(folder, signature)
        if manifest is None:
            try:
                manifest = _exported(source, signature, folder, allow_download, trust_remote_code)
            except OnnxExportError as error:
                if source.identity not in _SAID:
                    _SAID.add(source.identity)
                    print(f"recall-kit-dense: {error}; it cannot run on ONNX Runtime, using torch.",
                          file=sys.stderr)
                return None
        remember(signature, folder)
        _LOADED[key] = _loaded(source, signature, folder, manifest, max_seq_length, threads)
        return _LOADED[key]


def _exported(source: ModelSource, signature: str, folder: Path, allow_download: bool,
              trust_remote_code: bool) -> dict[str, Any]:
    """The manifest of `source`'s export into `folder`: a copy of one this process has seen, else
    a new export (sentence-transformers and torch, once)."""
    from recall_kit.plugin import stage
    from recall_kit_dense.models import load_model
    from recall_kit_dense.onnx_export import copy_seen, export

    copied = copy_seen(signature, folder, source.name)
    if copied is not None:
        return copied
    stage(f"dense: exporting {source.name} to ONNX (once)")
    return export(load_model(source, "cpu", None, trust_remote_code, allow_download), folder,
                  lambda work, settings, texts: OnnxModel(work, settings, threads=1).encode(texts))


def _loaded(source: ModelSource, signature: str, folder: Path, manifest: dict[str, Any],
            max_seq_length: int | None, threads: int) -> LoadedModel:
    limit = manifest.get("position_limit")
    if max_seq_length is not None and isinstance(limit, int) and max_seq_length > limit:
        raise DenseModelError(
            f"dense.max_seq_length={max_seq_length} exceeds the {limit} positions of model "
            f"{source.name!r}; use at most {limit}."
        )
    model = OnnxModel(folder, manifest, threads, max_seq_length)
    return LoadedModel(
        model=model, source=source, device="cpu", signature=signature,
        max_seq_length=model.max_seq_length, dimension=int(manifest["dimension"]),
        prompts={str(k): str(v) for k, v in (manifest.get("prompts") or {}).items()},
        lock=threading.Lock(), backend="onnx",
    )
