"""What decides a number's last bits on this machine: the CPU (its model and vector extensions),
the BLAS numpy uses and the kernel it chose, and the versions of numpy, torch, onnxruntime and
scikit-learn. A study's manifest records it for every step it computes, and `study status`
names the steps another machine computed (docs/study.md, "Which numbers reproduce where")."""

from __future__ import annotations

#: The vector extensions that choose a numeric kernel (OpenBLAS, ONNX Runtime's MLAS, oneDNN,
#: numpy's own loops), as /proc/cpuinfo names them.
VECTOR_EXTENSIONS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                     "amx_tile", "amx_bf16", "amx_int8", "neon", "asimd", "sve")


def machine() -> dict[str, str]:
    """What decides a number's last bits here: the CPU (model and vector extensions), the BLAS
    numpy uses (library, version and the kernel it chose for this CPU) and the versions of numpy,
    torch, onnxruntime and scikit-learn. A study's manifest records it for every step it computes."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy  # noqa: F401 - loaded so that threadpoolctl sees its BLAS

    described = {"cpu": _cpu_model() or platform.machine() or "unknown",
                 "vector_extensions": " ".join(flag for flag in VECTOR_EXTENSIONS if flag in _cpu_flags())}
    try:
        from threadpoolctl import threadpool_info

        blas = [info for info in threadpool_info() if info.get("user_api") == "blas" and "numpy" in info.get("filepath", "")]
    except Exception:  # noqa: BLE001 - a description, never a failure
        blas = []
    if blas:
        described["blas"] = " ".join(str(blas[0].get(key) or "") for key in ("internal_api", "version", "architecture")).strip()
    for package in ("numpy", "torch", "onnxruntime", "scikit-learn"):
        try:
            described[package] = version(package)
        except PackageNotFoundError:
            continue
    return described


def _cpuinfo_field(name: str) -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""


def _cpu_model() -> str:
    return _cpuinfo_field("model name")


def _cpu_flags() -> set[str]:
    return set((_cpuinfo_field("flags") or _cpuinfo_field("Features")).split())


def machine_key(described: dict[str, str]) -> str:
    """A short name for a machine description (the first 12 hex digits of its hash)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:12]


def machine_summary(described: dict[str, str]) -> str:
    """One line naming what differs between machines: the CPU, its widest vector extension, the BLAS kernel."""
    extensions = described.get("vector_extensions", "").split()
    widest = next((flag for flag in ("amx_tile", "avx512f", "avx2", "avx", "sve", "asimd", "neon") if flag in extensions), "")
    blas = described.get("blas", "")
    return ", ".join(part for part in (described.get("cpu", "unknown CPU"), widest.upper().replace("_TILE", ""),
                                      f"BLAS {blas}" if blas else "") if part)
