"""Proxies for another CPU, on one machine: ways to make the floating point of the dense path and
the judge come out a few last bits apart, as an AVX2 machine's kernels make it against an
AVX-512 one's (issue 67; docs/study.md, "Which numbers reproduce where").

Each proxy is applied in the process that runs the study (`apply(name)`, before anything is
embedded), or through the environment before numpy loads (`environment(name)`):

- ``default``: nothing changed;
- ``torch``: every dense leg and the judge's similarities and token vectors on torch instead of ONNX Runtime;
- ``ort-no-opt``: ONNX Runtime with its graph optimisations off, and no rewritten model;
- ``one-thread``: ONNX Runtime, torch and the BLAS on one thread (the machine has two);
- ``openblas-haswell``: ``OPENBLAS_CORETYPE=Haswell``, OpenBLAS's AVX2 kernels (this
  command's environment only: the variable is read when numpy loads);
- ``last-bit``: the last bit of every embedding's every float32 entry flipped, query and memory,
  retriever and judge.

Proxies join with "+" (``last-bit+openblas-haswell``: both at once). tests/test_portable.py runs
the example study under ``torch+last-bit+openblas-haswell`` (the three at once);
benchmarks/bench_portability.py counts what each proxy alone changes before and after the grid.
"""

from __future__ import annotations

import os
from typing import Any

PROXIES = ("default", "torch", "ort-no-opt", "one-thread", "openblas-haswell", "last-bit")


def environment(name: str) -> dict[str, str]:
    """The variables the proxy sets before the process starts (empty where `apply` does it all)."""
    if "+" in name:
        return {key: value for part in name.split("+") for key, value in environment(part).items()}
    if name == "openblas-haswell":
        return {"OPENBLAS_CORETYPE": "Haswell"}
    if name == "one-thread":
        return {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return {}


def flip_last_bit(vectors: Any) -> Any:
    """`vectors` (float32) with the lowest mantissa bit of every entry flipped."""
    import numpy as np

    array = np.ascontiguousarray(vectors, dtype=np.float32).copy()
    array.view(np.uint32)[...] ^= np.uint32(1)
    return array


def apply(name: str) -> None:
    """Patch this process's dense plugin for the proxy `name` (see the module's docstring)."""
    if "+" in name:
        for part in name.split("+"):
            apply(part)
        return
    if name not in PROXIES:
        raise SystemExit(f"unknown proxy {name!r}; choose among {', '.join(PROXIES)}")
    from recall_kit_dense import onnx_backend, retriever

    if name == "torch":
        from recall_kit_dense import judges, models, relevance

        retriever.DenseRetriever._backend = lambda self: "torch"  # type: ignore[method-assign]
        for reader in (judges.Similarity, relevance.TokenMatch):
            reader._loaded = lambda self: models.load_model(  # type: ignore[method-assign]
                models.resolve_model(self.model), self.device)
    elif name == "ort-no-opt":
        original = onnx_backend._inference_session

        def unoptimised(runtime: Any, path: Any, options: Any) -> Any:
            options.graph_optimization_level = runtime.GraphOptimizationLevel.ORT_DISABLE_ALL
            return original(runtime, path, options)

        onnx_backend._inference_session = unoptimised
        onnx_backend._rewritten = lambda runtime, path: None
    elif name == "one-thread":
        import torch

        torch.set_num_threads(1)
        retriever.DenseRetriever._memory_threads = staticmethod(lambda: 1)  # type: ignore[method-assign]
    elif name == "last-bit":
        _flip_every_embedding()


def _flip_every_embedding() -> None:
    """Wrap both encoders (ONNX Runtime's and sentence-transformers') so what they return is flipped:
    ONNX Runtime's embeddings (`encode`) and its embeddings and token vectors read in one pass
    (`read`, which `token_vectors` returns part of: flipped once)."""
    from recall_kit_dense import onnx_backend
    from sentence_transformers import SentenceTransformer

    onnx_encode = onnx_backend.OnnxModel.encode
    onnx_read = onnx_backend.OnnxModel.read
    torch_encode = SentenceTransformer.encode

    def onnx_flipped(self: Any, *args: Any, **kwargs: Any) -> Any:
        return flip_last_bit(onnx_encode(self, *args, **kwargs))

    def onnx_read_flipped(self: Any, *args: Any, **kwargs: Any) -> Any:
        embeddings, tokens = onnx_read(self, *args, **kwargs)
        return flip_last_bit(embeddings), [(flip_last_bit(vectors), words) for vectors, words in tokens]

    def torch_flipped(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = torch_encode(self, *args, **kwargs)
        if isinstance(found, list) and found and isinstance(found[0], dict):  # token vectors (output_value=None)
            import torch

            return [{**item, "token_embeddings": torch.from_numpy(flip_last_bit(item["token_embeddings"].float().numpy()))}
                    for item in found]
        return flip_last_bit(found)

    onnx_backend.OnnxModel.encode = onnx_flipped  # type: ignore[method-assign]
    onnx_backend.OnnxModel.read = onnx_read_flipped  # type: ignore[method-assign]
    SentenceTransformer.encode = torch_flipped  # type: ignore[method-assign]


if __name__ == "__main__":  # python benchmarks/portability_proxies.py PROXY -- recall-kit ARGS...
    import sys

    proxy, arguments = sys.argv[1], sys.argv[3:] if sys.argv[2:3] == ["--"] else sys.argv[2:]
    missing = {key: value for key, value in environment(proxy).items() if os.environ.get(key) != value}
    if missing:  # the variables must be there before numpy loads: start again with them
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **missing})
    apply(proxy)
    from recall_kit.cli import main

    sys.argv = ["recall-kit", *arguments]
    main()
