"""Starts real `podium serve` processes for the tests.

The binary is $PODIUM_BIN, else target/release/podium under the repository root.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
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

    def __init__(self, data_dir: Path, *, port: int = 0, api_keys: Sequence[str] = (),
                 backend: Optional[str] = None) -> None:
        self.data_dir = data_dir
        self.backend = backend
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
        if self.backend:
            args += ["--backend", self.backend]
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


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of the tests' own (skipped without one, unless $PODIUM_TEST_REDIS=require)."""
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("PODIUM_TEST_REDIS") == "require":
            pytest.fail("redis-server not found (apt-get install redis-server)", pytrace=False)
        pytest.skip("redis-server not found: the Redis-backend tests need it")
    port = free_port()
    work = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Server]:
    """podium serve on the Redis backend."""
    s = Server(tmp_path_factory.mktemp("podium-redis") / "data", backend=redis_url).start()
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

