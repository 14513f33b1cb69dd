"""Real processes for blockx-py's tests: the compiled `blockx dev`, and Coordinators/Workers of a
private lane on dev's etcd (the retry and resubmission tests kill or stop them, which would end
dev). Every process dies with the test run (setpriv --pdeathsig KILL)."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENT_PY = os.path.join(REPO, "client-py")
BINARY = os.environ.get("BLOCKX_BIN") or os.path.join(REPO, "dist", "blockx")
PYTHON = "/usr/bin/python3"

if CLIENT_PY not in sys.path:
    sys.path.insert(0, CLIENT_PY)


def check_binary() -> None:
    """The binary must be built from this tree's sources (as the bun process tests demand)."""
    if not os.access(BINARY, os.X_OK):
        raise RuntimeError(f"no {BINARY}: run `make build`")
    want = subprocess.run(["make", "-s", "--no-print-directory", "source-digest"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run([BINARY, "version"], capture_output=True, text=True, check=True).stdout
    if f"sources {want}" not in version:
        raise RuntimeError(f"{BINARY} was built from other sources ({version.strip()}; the tree is {want}): run `make build`")


class Proc:
    """Proc: one `blockx` child with its JSON log lines collected."""

    def __init__(self, args: List[str], env: Dict[str, str], name: str) -> None:
        self.name = name
        self.lines: List[dict] = []
        self.raw: List[str] = []
        self._cond = threading.Condition()
        self.p = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", BINARY, *args], env={**os.environ, **env},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            with self._cond:
                self.raw.append(line)
                try:
                    self.lines.append(json.loads(line))
                except ValueError:
                    pass
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pred, timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        with self._cond:
            i = 0
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i]):
                        return self.lines[i]
                    i += 1
                if self.p.poll() is not None:
                    raise RuntimeError(f"{self.name} exited with {self.p.returncode}:\n{''.join(self.raw[-30:])}")
                left = end - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.name} not ready in {timeout} s:\n{''.join(self.raw[-30:])}")
                self._cond.wait(min(left, 0.5))

    def grpc_addr(self) -> str:
        return str(self.wait_for(lambda l: l.get("msg") == "grpc listening")["addr"]).replace("0.0.0.0:", "127.0.0.1:")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.p.poll() is None:
            os.kill(self.p.pid, sig)

    def stop(self) -> None:
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.kill(signal.SIGKILL)
        self.p.wait(30)


class Dev:
    """Dev: a running `blockx dev` and the client variables it wrote."""

    def __init__(self, *, insecure: bool = True) -> None:
        # Plaintext by default: the lanes' own Coordinators and Workers join this dev's etcd, which
        # a secure dev guards with certificates and users (test_tls.py runs a secure one).
        self.dir = tempfile.mkdtemp(prefix="blockx-py-dev-")
        os.chmod(self.dir, 0o755)
        transport = {"BLOCKX_INSECURE": "1" if insecure else "0", "BLOCKX_TLS_CA_FILE": "", "BLOCKX_TLS_CERT_FILE": "", "BLOCKX_TLS_KEY_FILE": ""}
        self.proc = Proc(["dev"], {"DEV_DIR": self.dir, "DEV_WORKERS": "2", "DEV_BUNDLE_WORKERS": "1", **transport}, "dev")
        ready = self.proc.wait_for(lambda l: l.get("msg") == "dev ready", timeout=90)
        self.endpoints = ready["endpoints"]
        self.env: Dict[str, str] = {}
        with open(ready["envFile"]) as f:
            for line in f:
                name, _, value = line.strip().removeprefix("export ").partition("=")
                self.env[name] = value.strip("'")

    def stop(self) -> None:
        if self.proc.p.poll() is None:
            os.kill(self.proc.p.pid, signal.SIGINT)
            try:
                self.proc.p.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.p.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Lane:
    """Lane: Coordinators and Workers of one random registry prefix on an existing etcd, all
    writing one table store; stopped (SIGKILL) at the end of a test."""

    def __init__(self, etcd: str) -> None:
        self.etcd = etcd
        tag = "py" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))
        self.prefix = f"/blockx/test/lanes/{tag}/block-workers/"
        self.dir = tempfile.mkdtemp(prefix="blockx-py-lane-")
        os.chmod(self.dir, 0o755)
        self.table_store = os.path.join(self.dir, "tables.sqlite")
        # The Workers' TMPDIR (their executor pools' folders), passable by the executors' user: a
        # Worker stopped with SIGKILL leaves its folder here, removed with the lane, not in /tmp.
        self.tmp = os.path.join(self.dir, "tmp")
        os.mkdir(self.tmp)
        os.chmod(self.tmp, 0o711)
        self.procs: List[Proc] = []

    def worker(self, **env: str) -> Proc:
        p = Proc(["worker"], {"ETCD_ENDPOINTS": self.etcd, "WORKER_LISTEN": "127.0.0.1:0", "WORKER_REGISTRY_PREFIX": self.prefix,
                              "EXECUTOR_COUNT": "2", "TABLE_STORE_PATH": self.table_store, "TMPDIR": self.tmp, **env}, f"worker-{len(self.procs)}")
        self.procs.append(p)
        p.addr = p.grpc_addr()  # type: ignore[attr-defined]
        return p

    def coordinator(self, **env: str) -> Proc:
        p = Proc(["coordinator"], {"ETCD_ENDPOINTS": self.etcd, "COORDINATOR_LISTEN": "127.0.0.1:0",
                                   "COORDINATOR_REGISTRY_PREFIXES": self.prefix, "COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS": "100",
                                   "COORDINATOR_CPU_RED_LINE": "1", "COORDINATOR_MEMORY_RED_LINE": "1", **env}, f"coordinator-{len(self.procs)}")
        self.procs.append(p)
        p.addr = p.grpc_addr()  # type: ignore[attr-defined]
        return p

    def proxy(self, coordinators: List[str]) -> str:
        sock = os.path.join(self.dir, "proxy.sock")
        # The proxy relays only to Workers registered in this etcd.
        p = Proc(["proxy"], {"ETCD_ENDPOINTS": self.etcd, "PROXY_SOCKET_PATH": sock, "BLOCKX_COORDINATOR_ADDRS": ",".join(coordinators)}, "proxy")
        self.procs.append(p)
        end = time.monotonic() + 30
        while not os.path.exists(sock):
            if p.p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("proxy did not start:\n" + "".join(p.raw[-20:]))
            time.sleep(0.05)
        return sock

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def rows(table_store: str, table: str, order: str) -> List[tuple]:
    """rows reads a table with plain SQL (not through the Worker's writer)."""
    con = sqlite3.connect(f"file:{table_store}?mode=ro", uri=True)
    try:
        return con.execute(f'SELECT * FROM "{table}" ORDER BY {order}').fetchall()
    finally:
        con.close()
