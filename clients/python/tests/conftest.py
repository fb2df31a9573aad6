"""Starts real `podium serve` processes for the tests.

The binary is $PODIUM_BIN, else target/release/podium under the repository root.
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import AsyncIterator, Iterator, List, Optional, Sequence

import pytest

from podium_client import AsyncClient, Client

REPO_ROOT = Path(__file__).resolve().parents[3]
LISTEN = re.compile(r"^podium: (http|rpc) listening on (\S+):(\d+)\s*$")


def podium_bin() -> str:
    path = os.environ.get("PODIUM_BIN") or str(REPO_ROOT / "target" / "release" / "podium")
    if not os.path.isfile(path):
        pytest.fail(f"podium binary not found at {path}: build it or set PODIUM_BIN", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One `podium serve` on a data dir; start() again after kill() to restart it."""

    def __init__(self, data_dir: Path, *, port: int = 0, api_keys: Sequence[str] = ()) -> None:
        self.data_dir = data_dir
        self.port = port
        self.api_keys = list(api_keys)
        self.proc: Optional[subprocess.Popen[str]] = None
        self.url = ""
        #: host:port of the MessagePack-RPC listener.
        self.rpc = ""

    def start(self, timeout: float = 20.0) -> "Server":
        self.url = self.rpc = ""
        args: List[str] = [
            podium_bin(), "serve", "--data-dir", str(self.data_dir),
            "--http", f"127.0.0.1:{self.port}", "--rpc", "127.0.0.1:0", "--resp", "off",
            "--log-level", "warn",
        ]
        env = dict(os.environ)
        env.pop("PODIUM_API_KEYS", None)
        if self.api_keys:
            env["PODIUM_API_KEYS"] = ",".join(self.api_keys)  # kept out of `ps`
        log = open(self.data_dir.parent / f"{self.data_dir.name}.log", "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        log.close()
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        proc = self.proc

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise RuntimeError("podium serve did not say it was listening")
            if line is None:
                raise RuntimeError(f"podium serve exited with {proc.wait()}")
            m = LISTEN.match(line)
            if m and m.group(1) == "http":
                self.port = int(m.group(3))
                self.url = f"http://{m.group(2)}:{self.port}"
            elif m:
                self.rpc = f"{m.group(2)}:{m.group(3)}"
            if self.url and self.rpc:
                return self

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("podium") / "data").start()
    yield s
    s.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(server.url) as c:
        yield c


@pytest.fixture
async def aclient(server: Server) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(server.url) as c:
        yield c


@pytest.fixture
def board() -> str:
    return "t-" + uuid.uuid4().hex[:12]

