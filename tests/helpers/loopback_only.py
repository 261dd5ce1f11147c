"""Run a Python script with its network confined to 127.0.0.1, and a record of it.

    python tests/helpers/loopback_only.py LOG SCRIPT [ARGS...]

An audit hook (:func:`sys.addaudithook`) sees every name the process resolves and every
address it connects or sends to, in every thread and library; each is appended to ``LOG`` as
a JSON line ``{"event", "host", "port"}``. One whose host is not ``127.0.0.1`` is refused
(``ConnectionRefusedError``) after it is recorded, so a test both stops a leak and sees it.
Unix sockets are local and are not recorded.
"""

from __future__ import annotations

import json
import runpy
import sys
from typing import Any

ALLOWED_HOSTS = frozenset({"127.0.0.1"})
_EVENTS = frozenset({"socket.getaddrinfo", "socket.connect", "socket.sendto"})


def main() -> None:
    log_path, script, *args = sys.argv[1:]
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (lives as long as the process)

    def watch(event: str, event_args: tuple[Any, ...]) -> None:
        if event not in _EVENTS:
            return
        if event == "socket.getaddrinfo":
            host, port = event_args[0], event_args[1]
        else:
            address = event_args[1]
            if not isinstance(address, tuple):
                return  # a Unix socket's path
            host, port = address[0], address[1]
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        log.write(json.dumps({"event": event, "host": str(host), "port": port}) + "\n")
        if host not in ALLOWED_HOSTS:
            raise ConnectionRefusedError(f"{host}:{port} refused: this process may only use "
                                         "127.0.0.1 (tests/helpers/loopback_only.py)")

    sys.addaudithook(watch)
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
