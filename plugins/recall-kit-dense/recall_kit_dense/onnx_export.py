"""The one-time export of a sentence-transformers model to ONNX (fp32, from its own weights, offline)
into recall-kit's cache folder, for the ONNX Runtime path (`onnx_backend`), which needs no torch.

An export is a folder `<cache>/dense/onnx/<name>-<weights signature>-v<format>/` holding
`model.onnx` (inputs -> last hidden state), `tokenizer.json` (the model's fast tokenizer) and a
manifest written last (pooling, window, lower-casing, dimension, prompts, each file's size and
sha256, and how far the export's embeddings were from torch's on probe texts). It is built beside
the target and moved into place whole, as the packaged models are assembled (`packaged.py`); the
embeddings are checked against sentence-transformers' own before the manifest is written, and a
model the path cannot reproduce (another architecture, pooling or tokenizer) says why and stays on
torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recall_kit_dense.errors import DenseModelError
from recall_kit_dense.models import LoadedModel, ModelSource

#: Bumped when the export's files or the manifest's meaning change (a new folder name).
EXPORT_FORMAT = 2
MANIFEST = "recall-kit-onnx.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
#: The largest difference, per embedding component, between the export's and torch's embeddings
#: of the probe texts that the export is kept with (float32 sums in another order: ~1e-6).
TOLERANCE = 1e-4
#: Probe texts: short, with a prompt-like prefix, and longer than any window (truncation).
PROBES = ("an example query", "Two words", "query: where did Melanie paint the sunrise last year?",
          " ".join(["a long memory that runs past the model's window"] * 80))
_LOCK = threading.Lock()
#: Complete exports this process made or read, by weights signature: another cache folder gets a
#: copy (hard links where it can) of one of these rather than a new export of the same weights.
_SEEN: dict[str, Path] = {}


class OnnxExportError(DenseModelError):
    """The model cannot run on the ONNX path (its architecture, pooling or tokenizer), or its
    export does not reproduce torch's embeddings."""


def export_folder(source: ModelSource, signature: str) -> Path:
    """Where `source`'s export is (or will be): named by the model and its weights' signature."""
    from recall_kit_dense.cache import cache_folder

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", source.identity.rsplit("/", 1)[-1])[:60] or "model"
    return cache_folder() / "onnx" / f"{name}-{signature[:24]}-v{EXPORT_FORMAT}"


def read_manifest(folder: Path, signature: str) -> dict[str, Any] | None:
    """The export's manifest when the folder is complete (written last), made from these weights,
    and each file has the size it was written with; else None (exported again)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT or manifest.get("weights") != signature:
        return None
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != {MODEL_FILE, TOKENIZER_FILE}:
        return None
    for name, described in files.items():
        try:
            if (folder / name).stat().st_size != described["size"]:
                return None
        except (OSError, KeyError, TypeError):
            return None
    return manifest


#: Embeds texts with an export in a folder (its manifest given): unit-length float32 rows.
ExportEncoder = Callable[[Path, dict[str, Any], list[str]], Any]


def export(loaded: LoadedModel, folder: Path, encode: ExportEncoder) -> dict[str, Any]:
    """Export `loaded` (a sentence-transformers model on the CPU) into `folder`, atomically, and
    return its manifest; `encode` embeds the probe texts with the export, to check it against
    torch. OnnxExportError when the model cannot be exported or the export is off."""
    transformer, pooling = supported_modules(loaded)
    return _into_place(folder, loaded.signature, loaded.source.name,
                       lambda work: _write_export(loaded, transformer, pooling, work, encode))


def copy_seen(signature: str, folder: Path, name: str) -> dict[str, Any] | None:
    """`folder` made a copy of an export of the same weights that this process has seen
    complete elsewhere (another cache folder; hard links where the file system allows), and its
    manifest; None when there is none to copy."""
    seen = _SEEN.get(signature)
    if seen is None or seen == folder or read_manifest(seen, signature) is None:
        return None
    return _into_place(folder, signature, name, lambda work: _copy(seen, work, signature))


def remember(signature: str, folder: Path) -> None:
    """Note a complete export of these weights, for `copy_seen`."""
    _SEEN[signature] = folder


def _into_place(folder: Path, signature: str, name: str,
                fill: Callable[[Path], dict[str, Any] | None]) -> dict[str, Any]:
    """`fill` a work folder beside `folder`, then move it into place whole (a complete export
    already there is kept); OnnxExportError when it cannot be written."""
    with _LOCK:
        manifest = read_manifest(folder, signature)
        if manifest is not None:  # another thread exported it meanwhile
            return manifest
        work = folder.parent / f".{folder.name}.{os.getpid()}.{threading.get_ident()}.partial"
        try:
            folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(mode=0o700)
            manifest = fill(work)
            if manifest is None:
                raise OnnxExportError(f"the copied export of {name!r} is incomplete")
            moved_in = read_manifest(folder, signature)
            if moved_in is not None:  # another process moved a complete one in while this one filled its own
                shutil.rmtree(work, ignore_errors=True)
                return moved_in
            if folder.exists():  # an incomplete or stale export
                shutil.rmtree(folder)
            try:
                os.replace(work, folder)
            except OSError:
                if read_manifest(folder, signature) is None:  # another process moved its copy in
                    raise
        except OSError as error:  # a full disk or an unwritable cache: the run goes on, on torch
            raise OnnxExportError(
                f"could not write the ONNX export of {name!r} under {folder.parent} "
                f"({type(error).__name__}: {error.strerror or error})"
            ) from None
        finally:
            shutil.rmtree(work, ignore_errors=True)
        remember(signature, folder)
        return manifest


def _copy(seen: Path, work: Path, signature: str) -> dict[str, Any] | None:
    for name in (MODEL_FILE, TOKENIZER_FILE, MANIFEST):
        try:
            os.link(seen / name, work / name)
        except OSError:
            shutil.copy2(seen / name, work / name)
    # ONNX Runtime's rewrite of the graph (onnx_backend._rewritten), linked where it can be: made
    # of the same export by the same runtime, it is the same file, and linking it saves making it
    # again (0.4 s of CPU and 90 MB written for MiniLM). Not copied: a copy costs what making it does.
    for rewrite in seen.glob(f"{Path(MODEL_FILE).stem}.ort-*.onnx"):
        try:
            os.link(rewrite, work / rewrite.name)
        except OSError:
            pass
    return read_manifest(work, signature)


def supported_modules(loaded: LoadedModel) -> tuple[Any, str]:
    """(the Transformer module, its pooling mode) of a Transformer + Pooling [+ Normalize] model
    with a fast tokenizer, mean or CLS pooling; else OnnxExportError saying what differs."""
    name = loaded.source.name
    try:
        modules = list(loaded.model)
    except TypeError:
        raise OnnxExportError(f"{name!r} is not a sequence of sentence-transformers modules") from None
    kinds = [type(module).__name__ for module in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise OnnxExportError(f"{name!r} is {' + '.join(kinds)}, not Transformer + Pooling [+ Normalize]")
    pooling = modules[1]
    mode = str(getattr(pooling, "pooling_mode", None) or pooling.get_config_dict().get("pooling_mode", ""))
    if mode not in ("mean", "cls") or getattr(pooling, "include_prompt", True) is False:
        raise OnnxExportError(f"{name!r} uses {mode or 'another'} pooling (the ONNX path does mean or CLS)")
    if getattr(getattr(modules[0], "tokenizer", None), "backend_tokenizer", None) is None:
        raise OnnxExportError(f"{name!r} has no fast tokenizer (tokenizer.json)")
    return modules[0], mode


def _write_export(loaded: LoadedModel, transformer: Any, pooling: str, work: Path,
                  encode: ExportEncoder) -> dict[str, Any]:
    tokenizer = transformer.tokenizer
    input_names = [name for name in ("input_ids", "attention_mask", "token_type_ids")
                   if name in tokenizer.model_input_names]
    _export_graph(transformer, input_names, work / MODEL_FILE)
    (work / TOKENIZER_FILE).write_text(tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    config = getattr(getattr(transformer, "auto_model", None), "config", None)
    limit = getattr(config, "max_position_embeddings", None)
    import sentence_transformers

    manifest: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "model": loaded.source.identity,
        "weights": loaded.signature,
        "sentence_transformers": sentence_transformers.__version__,
        "pooling": pooling,
        "normalize": True,
        "input_names": input_names,
        "max_seq_length": loaded.max_seq_length,
        "position_limit": limit if isinstance(limit, int) and limit > 0 else None,
        "do_lower_case": bool(getattr(transformer, "do_lower_case", False)),
        "pad_id": tokenizer.pad_token_id,
        "pad_token": tokenizer.pad_token,
        "pad_type_id": getattr(tokenizer, "pad_token_type_id", 0),
        "dimension": loaded.dimension,
        "prompts": loaded.prompts,
        "files": {name: {"size": (work / name).stat().st_size, "sha256": _sha256(work / name)}
                  for name in (MODEL_FILE, TOKENIZER_FILE)},
    }
    manifest["probe_max_abs_difference"] = _check(loaded, encode(work, manifest, list(PROBES)))
    (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    return manifest


def _export_graph(transformer: Any, input_names: list[str], path: Path) -> None:
    """The transformer (inputs -> last hidden state) as an fp32 ONNX graph at `path`."""
    import torch

    network = getattr(transformer, "auto_model", None) or transformer.model

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs: Any) -> Any:
            return self.network(**dict(zip(input_names, inputs, strict=True))).last_hidden_state

    example = transformer.tokenizer(["an example query", "two"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in [*input_names, "last_hidden_state"]}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState().eval(), tuple(example[name] for name in input_names), str(path),
                input_names=input_names, output_names=["last_hidden_state"], dynamic_axes=axes,
                opset_version=17, dynamo=False,
            )
    except (RuntimeError, TypeError, ValueError, AttributeError) as error:
        raise OnnxExportError(f"torch.onnx.export failed ({type(error).__name__})") from None


def _check(loaded: LoadedModel, exported: Any) -> float:
    """The largest difference between the export's embeddings of the probe texts (`exported`)
    and sentence-transformers'; OnnxExportError above TOLERANCE (the export is then not kept)."""
    import numpy as np

    with loaded.lock:
        reference = loaded.model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True,
                                        show_progress_bar=False)
    if exported.shape != reference.shape:
        raise OnnxExportError(f"the export gives {exported.shape[1]}-dimensional embeddings, torch "
                              f"{reference.shape[1]}")
    difference = float(np.abs(exported - reference).max())
    if not difference <= TOLERANCE:
        raise OnnxExportError(f"the export's embeddings differ from torch's by {difference:.2g} "
                              f"(more than {TOLERANCE:g})")
    return difference


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
