"""ClientConfig: what blockx-py reads from the environment (the same variables as the CLI and the
TypeScript SDK, written by ``blockx dev`` to ``blockx-dev.env``)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple

from .errors import BlockxError

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):(\d{1,5})$")


def _addr_list(env: Mapping[str, str], name: str, default: str) -> Tuple[str, ...]:
    raw = env.get(name, "") or default
    addrs = tuple(a.strip() for a in raw.split(",") if a.strip())
    bad = [a for a in addrs if not _HOST_PORT.match(a)]
    if not addrs or bad:
        raise BlockxError("INVALID_ARGUMENT", f"{name}: expected a comma-separated host:port list, got {raw!r}")
    return addrs


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        v = lo - 1
    if not lo <= v <= hi:
        raise BlockxError("INVALID_ARGUMENT", f"{name}: expected an integer from {lo} to {hi}, got {raw!r}")
    return v


_TLS_VARS = ("BLOCKX_TLS_CA_FILE", "BLOCKX_TLS_CERT_FILE", "BLOCKX_TLS_KEY_FILE")


@dataclass(frozen=True)
class TlsFiles:
    """TlsFiles: the client's mTLS files (absolute paths), read again for each new channel."""

    ca_file: str
    cert_file: str
    key_file: str

    def read(self) -> Tuple[bytes, bytes, bytes]:
        out = []
        for name, path in zip(_TLS_VARS, (self.ca_file, self.cert_file, self.key_file)):
            try:
                with open(path, "rb") as f:
                    out.append(f.read())
            except OSError as e:
                raise BlockxError("INVALID_ARGUMENT", f"{name}: expected a readable file, got {path!r} ({e.strerror})") from None
        return out[0], out[1], out[2]


def _transport(env: Mapping[str, str]) -> Tuple[Optional[TlsFiles], bool]:
    """_transport applies the rule every BlockX role and the TypeScript SDK apply: all three
    BLOCKX_TLS_* files (mTLS), or BLOCKX_INSECURE=1 (plaintext chosen on purpose); half a TLS
    configuration, or both, is an error naming the variable. Neither: decided when a direct
    channel is opened (the proxy's Unix socket needs neither)."""
    given = [n for n in _TLS_VARS if env.get(n, "").strip() != ""]
    insecure = env.get("BLOCKX_INSECURE", "").strip() == "1"
    if not given:
        return None, insecure
    if insecure:
        raise BlockxError("INVALID_ARGUMENT", f"BLOCKX_INSECURE: expected 0 when {', '.join(given)} is set, got '1'")
    missing = [n for n in _TLS_VARS if n not in given]
    if missing:
        raise BlockxError(
            "INVALID_ARGUMENT",
            f"{missing[0]}: expected a PEM file path (the TLS configuration is half set: {', '.join(given)} given), got ''",
        )
    files = TlsFiles(*(os.path.abspath(env[n].strip()) for n in _TLS_VARS))
    files.read()  # unreadable files fail here, naming the variable, not at the first call
    return files, False


@dataclass(frozen=True)
class ClientConfig:
    """ClientConfig: frozen, fully defaulted; see the README's client variables table."""

    coordinator_addrs: Tuple[str, ...] = ("127.0.0.1:8080",)
    bundle_coordinator_addrs: Tuple[str, ...] = ("127.0.0.1:8081",)
    syncinvoker_addr: str = "127.0.0.1:9070"
    #: Empty: direct. Set: every call goes through ``blockx proxy`` on this Unix socket.
    proxy_socket_path: str = ""
    slot_ttl_ms: int = 5000
    rpc_timeout_ms: int = 10000
    worker_lost_after_ms: int = 3000
    keepalive_time_ms: int = 10000
    max_attempts: int = 3
    #: mTLS files (BLOCKX_TLS_*), or None.
    tls: Optional[TlsFiles] = None
    #: BLOCKX_INSECURE=1: plaintext chosen on purpose.
    insecure: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def from_env(env: Optional[Mapping[str, str]] = None, *, direct: bool = False) -> "ClientConfig":
        """from_env reads BLOCKX_COORDINATOR_ADDRS, BLOCKX_BUNDLE_COORDINATOR_ADDRS,
        BLOCKX_SYNCINVOKER_ADDR, PROXY_SOCKET_PATH, BLOCKX_SLOT_TTL_MS, BLOCKX_RPC_TIMEOUT_MS,
        BLOCKX_WORKER_LOST_AFTER_MS, BLOCKX_KEEPALIVE_TIME_MS, BLOCKX_MAX_ATTEMPTS and the
        transport: BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE and BLOCKX_TLS_KEY_FILE (mTLS), or
        BLOCKX_INSECURE=1. The proxy socket wins when set (as in the CLI) unless ``direct`` is true.
        A bad value raises BlockxError(INVALID_ARGUMENT) naming the variable, the rule and the value."""
        env = os.environ if env is None else env
        si = env.get("BLOCKX_SYNCINVOKER_ADDR", "") or "127.0.0.1:9070"
        if not _HOST_PORT.match(si):
            raise BlockxError("INVALID_ARGUMENT", f"BLOCKX_SYNCINVOKER_ADDR: expected host:port, got {si!r}")
        tls, insecure = _transport(env)
        return ClientConfig(
            coordinator_addrs=_addr_list(env, "BLOCKX_COORDINATOR_ADDRS", "127.0.0.1:8080"),
            bundle_coordinator_addrs=_addr_list(env, "BLOCKX_BUNDLE_COORDINATOR_ADDRS", "127.0.0.1:8081"),
            syncinvoker_addr=si,
            proxy_socket_path="" if direct else env.get("PROXY_SOCKET_PATH", ""),
            slot_ttl_ms=_int(env, "BLOCKX_SLOT_TTL_MS", 5000, 1, 86_400_000),
            rpc_timeout_ms=_int(env, "BLOCKX_RPC_TIMEOUT_MS", 10000, 1, 86_400_000),
            worker_lost_after_ms=_int(env, "BLOCKX_WORKER_LOST_AFTER_MS", 3000, 1, 86_400_000),
            keepalive_time_ms=_int(env, "BLOCKX_KEEPALIVE_TIME_MS", 10000, 5000, 86_400_000),
            max_attempts=_int(env, "BLOCKX_MAX_ATTEMPTS", 3, 1, 100),
            tls=tls,
            insecure=insecure,
        )
