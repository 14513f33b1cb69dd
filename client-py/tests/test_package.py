"""client-py builds as a wheel with Debian's setuptools, ships py.typed and the stubs, depends only
on grpcio and protobuf and says Apache-2.0 with the repository's LICENSE inside; the committed
stubs are what gen-stubs.sh makes."""
import os
import shutil
import subprocess
import zipfile

from support import CLIENT_PY, PYTHON


def test_wheel_builds_with_debian_setuptools(tmp_path):
    src = tmp_path / "client-py"
    shutil.copytree(CLIENT_PY, src, ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "*.egg-info"))
    out = tmp_path / "dist"
    p = subprocess.run([PYTHON, "-c", f"from setuptools import build_meta as b; print(b.build_wheel({str(out)!r}))"], cwd=src,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    wheel = out / p.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert {"blockx/py.typed", "blockx/context.py", "blockx/_gen/worker/v1/worker_pb2.py", "blockx/_gen/worker/v1/worker_pb2.pyi",
            "blockx/_gen/syncinvoker/v1/sync_invoker_pb2_grpc.py"} <= names
    required = sorted(l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Requires-Dist:") and "extra ==" not in l)
    assert required == ["grpcio (>=1.51)", "protobuf (>=4.21)"]
    # Apache-2.0 as BlockX, with the licence text inside the wheel.
    assert "License: Apache-2.0" in meta.splitlines()
    assert "Classifier: License :: OSI Approved :: Apache Software License" in meta.splitlines()
    assert any(n.endswith(".dist-info/LICENSE") for n in names), sorted(names)


def test_license_is_the_repository_license():
    with open(os.path.join(CLIENT_PY, "LICENSE")) as a, open(os.path.join(CLIENT_PY, "..", "LICENSE")) as b:
        assert a.read() == b.read(), "client-py/LICENSE differs from the repository's LICENSE: copy it"


def test_committed_stubs_are_what_gen_stubs_makes(tmp_path):
    if not (shutil.which("protoc") and shutil.which("grpc_python_plugin")):
        raise AssertionError("protoc and grpc_python_plugin are needed (make py-stubs installs protobuf-compiler, protobuf-compiler-grpc)")
    repo = tmp_path / "repo"
    shutil.copytree(os.path.join(CLIENT_PY, "..", "proto"), repo / "proto")
    shutil.copytree(CLIENT_PY, repo / "client-py", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    p = subprocess.run(["bash", str(repo / "client-py" / "scripts" / "gen-stubs.sh")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    gen, committed = repo / "client-py" / "blockx" / "_gen", os.path.join(CLIENT_PY, "blockx", "_gen")
    for root, _dirs, files in os.walk(gen):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), gen)
            with open(os.path.join(root, f)) as a, open(os.path.join(committed, rel)) as b:
                assert a.read() == b.read(), f"client-py/blockx/_gen/{rel} differs from what make py-stubs makes"
