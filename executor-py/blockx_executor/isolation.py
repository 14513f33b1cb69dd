"""In-process fences around user code: RLIMIT_NPROC and an audit hook.

The audit hook cannot be removed once added. It denies, for the whole process (the executor
itself needs none of these after its Hello):
- creating processes: fork, forkpty, posix_spawn, spawn, exec, system, subprocess, pty.spawn;
- signalling processes (os.kill, os.killpg): user code must not kill the Worker;
- loading native code through ctypes (dlopen, dlsym), which would reach libc's fork;
- unless the network is allowed (tests only): connect, bind, sendto, sendmsg and name lookups.
An in-process hook is a fence, not a sandbox: the real boundaries are the ones the pool adds
(network namespace, unprivileged user, RLIMIT_NPROC, a process group it kills).
"""

import sys

from .capture import warn

PROCESS_EVENTS = (
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.spawn",
    "os.exec",
    "os.system",
    "os.startfile",
    "subprocess.Popen",
    "pty.spawn",
)
SIGNAL_EVENTS = ("os.kill", "os.killpg")
NATIVE_EVENTS = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle")
NETWORK_EVENTS = (
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
    "socket.sethostname",
)


def denied_events(allow_network: bool) -> dict:
    """denied_events maps each denied audit event to the PermissionError message it raises."""
    table = {}
    for event in PROCESS_EVENTS:
        table[event] = f"blockx: user code may not create processes ({event})"
    for event in SIGNAL_EVENTS:
        table[event] = f"blockx: user code may not signal processes ({event})"
    for event in NATIVE_EVENTS:
        table[event] = f"blockx: user code may not load native code ({event})"
    if not allow_network:
        for event in NETWORK_EVENTS:
            table[event] = f"blockx: user code may not use the network ({event})"
    return table


def set_nproc_limit(value: str) -> None:
    """set_nproc_limit applies BLOCKX_EXECUTOR_NPROC_LIMIT (threads count too, on Linux)."""
    try:
        n = int(value)
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    except Exception as e:
        warn(f"could not set RLIMIT_NPROC to {value!r}: {e}")


def _deny_fork_exec() -> None:
    # _posixsubprocess.fork_exec raises no audit event of its own; subprocess.Popen does, but
    # user code may call fork_exec directly.
    try:
        import _posixsubprocess

        def fork_exec(*args, **kwargs):
            raise PermissionError("blockx: user code may not create processes (_posixsubprocess.fork_exec)")

        _posixsubprocess.fork_exec = fork_exec
    except Exception:
        pass


def install_audit_hook(allow_network: bool) -> None:
    """install_audit_hook fences the process in; call it after the Hello, once."""
    _deny_fork_exec()
    denied = denied_events(allow_network).get

    def blockx_audit_hook(event, args):
        message = denied(event)
        if message is not None:
            raise PermissionError(message)

    sys.addaudithook(blockx_audit_hook)
