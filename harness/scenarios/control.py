"""A small control channel from test processes to the process that owns the environment.

`mkdc run` owns the dispatcher processes (and the local provider's apiservers);
pytest-xdist workers are other processes. They ask the owner to kill or restart
a dispatcher replica, or stop or start a worker's apiserver, over a Unix socket in
the private run directory, authenticated with a random key.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from multiprocessing.connection import Client as _Client
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

Handler = Callable[..., Any]


SOCKET = "control.sock"
# sun_path holds 108 bytes with its terminating NUL: a longer path cannot be bound
MAX_SOCKET_PATH = 107


class Server:
    """Serves named operations until closed; one thread per connection."""

    def __init__(self, run_dir: Path, handlers: dict[str, Handler]) -> None:
        self.address = str(run_dir / SOCKET)
        self.key = secrets.token_bytes(32)
        self.handlers = handlers
        self._listener = Listener(self.address, family="AF_UNIX", authkey=self.key)
        self._thread = threading.Thread(target=self._accept, name="mkdc-control", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError):
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: Any) -> None:
        with conn:
            while True:
                try:
                    op, kwargs = conn.recv()
                except (EOFError, OSError):
                    return
                try:
                    conn.send(("ok", self.handlers[op](**kwargs)))
                except Exception as exc:  # reported to the caller, who raises it
                    conn.send(("error", f"{op}: {exc}"))

    def close(self) -> None:
        self._listener.close()
        Path(self.address).unlink(missing_ok=True)


class Client:
    """Calls the owner's operations: `client.call("kill-dispatcher", replica=0)`."""

    def __init__(self, address: str, key: bytes) -> None:
        self._conn = _Client(address, family="AF_UNIX", authkey=key)
        self._lock = threading.Lock()

    def call(self, op: str, **kwargs: Any) -> Any:
        with self._lock:
            self._conn.send((op, kwargs))
            status, value = self._conn.recv()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        self._conn.close()
