"""One deadline for a whole HTTP request: httpx bounds each read (`timeout`), so a server that
sends one header byte a second is never cut off; this network backend gives every connect, read
and write at most the time left before the calling thread's deadline (`within(seconds)`), so the
headers and the body together take at most that long. httpcore's `NetworkBackend` and
`NetworkStream` are its public extension points; the backend is set on an `httpx.HTTPTransport`'s
pool (`with_deadline`), which keeps everything else of httpx (TLS, proxies, errors)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore

_local = threading.local()


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every network operation of this thread's requests in the block ends by now + `seconds`."""
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = None


def _left(timeout: float | None) -> float | None:
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def with_deadline(transport: Any) -> Any:
    """`transport` (an `httpx.HTTPTransport`) whose connections honour `within`; unchanged where
    its pool is not the one this httpx version builds (the per-read timeout still holds)."""
    pool: Any = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _Backend(backend)  # noqa: SLF001 - httpcore's extension point, set after build
    return transport
