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


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def install_process_filter(program_hex: str) -> None:
    """install_process_filter loads the pool's seccomp program (BLOCKX_EXECUTOR_PROCESS_FILTER, the
    classic-BPF bytes in hex) into this process: from then on the kernel refuses exec, fork and any
    clone that is not a thread, whatever Python module asks. Call it before any thread starts (a
    filter binds the calling thread and the threads it starts) and before the audit hook (it needs
    ctypes). A filter that cannot be loaded stops the executor: the pool asked for it."""
    import ctypes
    import threading

    if threading.active_count() != 1:
        raise RuntimeError("the process filter must be installed before any thread starts")
    program = bytes.fromhex(program_hex)
    if len(program) == 0 or len(program) % 8 != 0:
        raise ValueError(f"BLOCKX_EXECUTOR_PROCESS_FILTER: {len(program)} bytes is not a BPF program")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


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
