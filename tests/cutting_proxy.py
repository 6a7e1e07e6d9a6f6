"""A loopback TCP proxy that cuts the connection carrying a chosen request: a network that fails mid-statement.

Bytes pass through untouched until a chunk from the client holds ``marker``; then, ``times``
times, the proxy either drops the request and closes the connection (``after_forwarding=False``:
the server never sees it) or forwards it and closes the connection before the answer comes
back (``True``: the server ran it, the client never hears). Later connections pass.

Example::

    with CuttingProxy(("127.0.0.1", 9050), marker=b"answered_by") as proxy:
        client_url = proxy.url          # instead of the server's
        ...
        proxy.cuts                      # 1
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any


class CuttingProxy:
    def __init__(self, target: tuple[str, int], marker: bytes, *, times: int = 1,
                 after_forwarding: bool = False) -> None:
        self.target, self.marker, self.left, self.after_forwarding = target, marker, times, after_forwarding
        self.cuts = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._closed = False

    def __enter__(self) -> CuttingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._client_to_server, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _take_cut(self, chunk: bytes) -> bool:
        with self._lock:
            if self.left > 0 and self.marker in chunk:
                self.left -= 1
                self.cuts += 1
                return True
        return False

    def _client_to_server(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while chunk := client.recv(65536):
                if self._take_cut(chunk):
                    if self.after_forwarding:
                        upstream.sendall(chunk)
                        while len(chunk) == 65536 and (chunk := client.recv(65536)):  # the rest of the body
                            upstream.sendall(chunk)
                    break
                upstream.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(client)
            if not self.after_forwarding:
                _close(upstream)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
