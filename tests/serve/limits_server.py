"""A real uvicorn server of the chat app on 127.0.0.1, for the load tests
(tests/serve/test_http_limits.py): scripted sessions, the audited sink on a real store.

Run as ``python -m tests.serve.limits_server CONFIG.json``; the JSON gives ``root`` (a
folder for the store, the workspace and the port file), ``nofile`` (the soft
``RLIMIT_NOFILE`` to set first, or null), ``limits`` (:class:`agc.serve.HttpLimits`
fields), ``max_sessions`` and ``sndbuf`` (the listening socket's ``SO_SNDBUF`` in
bytes, which every accepted connection inherits, or null for the kernel's
self-tuning buffer). Once listening it writes ``{"port", "pid"}`` to
``<root>/port.json``. Each turn runs one command and holds after the command started
until the file ``<root>/release`` exists.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn

from agc.flows import AuditSink
from agc.serve import HttpLimits, Supervisor, connection_budget, create_app, uvicorn_config
from tests.serve.fakes import Behaviour, Factory, make_config


def main(argv: list[str]) -> int:
    spec: dict[str, Any] = json.loads(Path(argv[0]).read_text())
    root = Path(spec["root"])
    if spec.get("nofile") is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(spec["nofile"]), hard))
    max_sessions = int(spec.get("max_sessions", 2))
    limits = connection_budget(HttpLimits(**spec.get("limits", {})), max_sessions=max_sessions)
    release = root / "release"
    hold = asyncio.Event()

    async def watch() -> None:  # the turn holds until the test creates the file
        while not release.exists():
            await asyncio.sleep(0.02)
        hold.set()

    config = make_config(root, max_sessions=max_sessions)
    sink = AuditSink(store=root / "store", signing_key=None, ledger_root=None)
    supervisor = Supervisor(config, sink, session_factory=Factory(Behaviour(hold=hold)))
    port_file = root / "port.json"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if spec.get("sndbuf") is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(spec["sndbuf"]))
    sock.bind(("127.0.0.1", 0))
    sock.listen(limits.backlog)
    port = sock.getsockname()[1]

    tasks: list[asyncio.Task[None]] = []

    def started() -> None:
        tasks.append(asyncio.get_running_loop().create_task(watch()))
        body = {"port": port, "pid": os.getpid(), "maxConnections": limits.max_connections}
        tmp = port_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(body))
        tmp.replace(port_file)

    app = create_app(supervisor, on_startup=started)
    server = uvicorn.Server(uvicorn_config(app, limits, lifespan="on", log_level="error"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
