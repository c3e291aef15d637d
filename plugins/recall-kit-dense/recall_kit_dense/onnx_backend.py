"""The query path on ONNX Runtime (`-o dense.backend=onnx`): the loaded model's transformer is
exported to ONNX once, from the local weights (offline), and kept in the user's cache folder; int8
dynamic quantisation on request; pooling and normalisation done here as sentence-transformers
does them. Corpus embeddings stay on the torch path, so the embedding cache is unaffected.

Needs the plugin's `onnx` extra: ``pip install "recall-kit-dense[onnx]"`` (onnxruntime, onnx).
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit_dense.cache import cache_folder
from recall_kit_dense.models import DenseModelError, LoadedModel

#: Bumped when the exported graph's inputs or outputs change.
EXPORT_FORMAT = 1
#: Bumped when the quantisation recipe changes (a new file name: an old int8 file is not reused).
QUANTIZE_FORMAT = 2
_EXPORT_LOCK = threading.Lock()


def _require_runtime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise DenseModelError(
            "dense.backend=onnx needs ONNX Runtime: pip install \"recall-kit-dense[onnx]\" "
            "(or use the default -o dense.backend=torch)."
        ) from None
    return onnxruntime


def _modules(loaded: LoadedModel) -> tuple[Any, str]:
    """(the transformer module, pooling mode) of a Transformer + Pooling [+ Normalize] model."""
    modules = list(loaded.model)
    kinds = [type(module).__name__ for module in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise DenseModelError(
            f"dense.backend=onnx handles Transformer + Pooling models; {loaded.source.name!r} is "
            f"{' + '.join(kinds)}: use -o dense.backend=torch."
        )
    pooling = modules[1]
    mode = str(getattr(pooling, "pooling_mode", None) or pooling.get_config_dict().get("pooling_mode", ""))
    if mode not in ("mean", "cls") or getattr(pooling, "include_prompt", True) is False:
        raise DenseModelError(
            f"dense.backend=onnx handles mean or CLS pooling; {loaded.source.name!r} uses "
            f"{mode or 'another'} pooling: use -o dense.backend=torch."
        )
    return modules[0], mode


def _export(transformer: Any, input_names: list[str], path: Path) -> None:
    """Export the transformer (inputs -> last hidden state) to `path`, atomically."""
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
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState().eval(), tuple(example[name] for name in input_names), str(partial),
                input_names=input_names, output_names=["last_hidden_state"], dynamic_axes=axes,
                opset_version=17, dynamo=False,
            )
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


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


def model_file(loaded: LoadedModel, quantize: bool) -> Path:
    """The cached ONNX file for `loaded` (exported, and quantised, on first use)."""
    transformer, _ = _modules(loaded)
    input_names = [name for name in ("input_ids", "attention_mask", "token_type_ids")
                   if name in transformer.tokenizer.model_input_names]
    stem = f"{loaded.signature[:24]}-v{EXPORT_FORMAT}"
    folder = cache_folder() / "onnx"
    exported = folder / f"{stem}.onnx"
    wanted = folder / f"{stem}-q{QUANTIZE_FORMAT}-int8.onnx" if quantize else exported
    with _EXPORT_LOCK:
        if not exported.is_file():
            _export(transformer, input_names, exported)
        if quantize and not wanted.is_file():
            _quantize(exported, wanted)
    return wanted


class OnnxQueryEncoder:
    """Embeds texts with the ONNX export of a loaded sentence-transformers model.

    `threads` is ONNX Runtime's intra-op thread count: 1 suits single queries on a busy machine.
    """

    def __init__(self, loaded: LoadedModel, quantize: bool = False, threads: int = 1) -> None:
        runtime = _require_runtime()
        self._transformer, self._pooling = _modules(loaded)
        self._max_length = loaded.max_seq_length
        self._lower_case = bool(getattr(self._transformer, "do_lower_case", False))
        self.path = model_file(loaded, quantize)
        options = runtime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = runtime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self._inputs = [node.name for node in self._session.get_inputs()]

    def encode(self, texts: list[str], prompt: str = "", batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text (`prompt` put before each), run in
        batches of `batch_size` texts (padding is per batch, as sentence-transformers does)."""
        parts = [self._encode_batch(texts[start:start + batch_size], prompt)
                 for start in range(0, len(texts), batch_size)]
        return np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    def _encode_batch(self, texts: list[str], prompt: str) -> np.ndarray:
        texts = [prompt + text for text in texts]
        if self._lower_case:
            texts = [text.lower() for text in texts]
        encoded = self._transformer.tokenizer(
            texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="np"
        )
        feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in self._inputs}
        hidden = self._session.run(None, feed)[0]
        if self._pooling == "cls":
            vectors = hidden[:, 0]
        else:
            mask = feed["attention_mask"][..., None].astype(np.float32)
            vectors = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.clip(norms, 1e-12, None), dtype=np.float32)
