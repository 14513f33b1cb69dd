"""A hostile function: tries every escape test/security/sandbox.test.ts checks and reports, for
each, whether it was refused and how. main(ctx, input) with input {"secretFile", "port",
"workerPid"}. Every escape runs even when an earlier one got through."""

import os
import sys
import types


def attempt(fn):
    try:
        got = fn()
        return {"refused": False, "how": repr(got)[:300]}
    except BaseException as e:  # the refusal itself, whatever its type
        return {"refused": True, "how": f"{type(e).__name__}: {e}"[:300]}


def fresh_module(name):
    """The Python 3.11 audit-hook bypass: a re-imported module is not the patched one."""
    sys.modules.pop(name, None)
    return __import__(name)


def posixsubprocess_reimport():
    import subprocess

    fresh = fresh_module("_posixsubprocess")
    subprocess._posixsubprocess = fresh
    subprocess._fork_exec = fresh.fork_exec  # 3.11 calls it by this name
    # Hide Popen's own audit event too: only the kernel is left to say no.
    fake_sys = types.SimpleNamespace(**{k: getattr(sys, k) for k in dir(sys) if not k.startswith("__")})
    fake_sys.audit = lambda *a: None
    subprocess.sys = fake_sys
    p = subprocess.Popen([sys.executable, "-c", "print('escaped')"], stdout=subprocess.PIPE)
    return p.communicate()[0]


def ctypes_fork():
    import ctypes

    return ctypes.CDLL(None).fork()


def os_fork():
    return os.fork()


def subprocess_run():
    import subprocess

    return subprocess.run(["/bin/sh", "-c", "id"], capture_output=True).stdout


def tcp_connect(port):
    s = fresh_module("_socket").socket(2, 1)  # AF_INET, SOCK_STREAM, past the audit hook
    s.connect(("127.0.0.1", port))
    return "connected"


def tcp_connect_hooked(port):
    import socket

    return socket.create_connection(("127.0.0.1", port), timeout=2)


def read(path):
    with open(path, "rb") as f:
        return f.read(100)


def other_executors():
    # The pool's folder holds every executor's scratch folder beside the socket.
    socket_path = sys.argv[sys.argv.index("--socket") + 1]
    folder = os.path.dirname(socket_path)
    others = [n for n in os.listdir(folder) if n != os.path.basename(socket_path)]
    if not others:
        raise PermissionError(f"{folder} shows nothing but the socket")
    return others


def worker_processes(worker_pid):
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    if worker_pid in pids or len(pids) > 3:
        return pids
    raise PermissionError(f"/proc shows only this sandbox's processes {pids}")


def signal_worker(worker_pid):
    os.kill(worker_pid, 0)
    return "signalled"


def fork_bomb():
    children = 0
    for _ in range(10_000):
        if os.fork() == 0:
            os._exit(0)
        children += 1
    return children


def main(ctx, input):
    secret = input["secretFile"]
    port = input["port"]
    worker_pid = input["workerPid"]
    return {
        "posixsubprocess_reimport": attempt(posixsubprocess_reimport),
        "ctypes": attempt(ctypes_fork),
        "os_fork": attempt(os_fork),
        "subprocess": attempt(subprocess_run),
        "tcp_connect": attempt(lambda: tcp_connect(port)),
        "tcp_connect_hooked": attempt(lambda: tcp_connect_hooked(port)),
        "etc_blockx": attempt(lambda: os.listdir("/etc/blockx")),
        "etc_passwd": attempt(lambda: read("/etc/passwd")),
        "table_store": attempt(lambda: read(secret)),
        "other_executors": attempt(other_executors),
        "worker_proc_environ": attempt(lambda: read(f"/proc/{worker_pid}/environ")),
        "worker_in_proc": attempt(lambda: worker_processes(worker_pid)),
        "signal_worker": attempt(lambda: signal_worker(worker_pid)),
        "fork_bomb": attempt(fork_bomb),
        "status": [l for l in open("/proc/self/status").read().splitlines() if l.startswith(("NoNewPrivs", "Seccomp:", "CapEff", "Uid"))],
    }
