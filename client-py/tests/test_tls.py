"""blockx-py over mutual TLS: a `blockx dev` secure by default (its private CA, a certificate for
every role and one for the client in blockx-dev.env), direct and through the proxy; and the
transport rule every BlockX role applies (all three BLOCKX_TLS_* files, or BLOCKX_INSECURE=1)."""
import os

import pytest

from support import Dev, check_binary

from blockx import BlockxError, Client

DOUBLE = "def main(ctx, x):\n    return x * 2\n"
TLS_VARS = ("BLOCKX_TLS_CA_FILE", "BLOCKX_TLS_CERT_FILE", "BLOCKX_TLS_KEY_FILE")


@pytest.fixture(scope="module")
def secure_dev():
    check_binary()
    d = Dev(insecure=False)
    yield d
    d.stop()


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_a_task_and_an_invoke_over_mtls(secure_dev, mode):
    env = secure_dev.env
    assert all(env.get(n) for n in TLS_VARS) and env.get("BLOCKX_INSECURE") != "1"
    with Client.from_env({**env, "BLOCKX_WORKER_LOST_AFTER_MS": "20000"}, direct=(mode == "direct")) as c:
        assert c.config.tls is not None and not c.config.insecure
        run = c.run_task(source=DOUBLE, inputs=[1, 2, 3])
        assert run.state == "SUCCEEDED" and run.result() == [2, 4, 6]
        if mode == "direct":
            assert c.invoke(source=DOUBLE, args=21) == 42


def test_a_plaintext_client_gets_no_answer_from_an_mtls_dev(secure_dev):
    env = {k: v for k, v in secure_dev.env.items() if k not in TLS_VARS}
    with Client.from_env({**env, "BLOCKX_INSECURE": "1", "BLOCKX_MAX_ATTEMPTS": "1", "BLOCKX_RPC_TIMEOUT_MS": "3000"}, direct=True) as c:
        with pytest.raises(BlockxError) as ei:
            c.invoke(source=DOUBLE, args=1)
        assert ei.value.code == "UNREACHABLE"


def test_half_a_tls_configuration_or_both_transports_is_refused_naming_the_variable(tmp_path):
    pem = tmp_path / "x.pem"
    pem.write_text("not read until all three are set")
    with pytest.raises(BlockxError, match=r"BLOCKX_TLS_KEY_FILE: expected a PEM file path \(the TLS configuration is half set"):
        Client.from_env({"BLOCKX_TLS_CA_FILE": str(pem), "BLOCKX_TLS_CERT_FILE": str(pem)})
    with pytest.raises(BlockxError, match=r"BLOCKX_INSECURE: expected 0 when BLOCKX_TLS_CA_FILE"):
        Client.from_env({"BLOCKX_TLS_CA_FILE": str(pem), "BLOCKX_INSECURE": "1"})
    with pytest.raises(BlockxError, match=r"BLOCKX_TLS_CERT_FILE: expected a readable file, got '/nonexistent/cert.pem'"):
        Client.from_env({"BLOCKX_TLS_CA_FILE": str(pem), "BLOCKX_TLS_CERT_FILE": "/nonexistent/cert.pem", "BLOCKX_TLS_KEY_FILE": str(pem)})


def test_neither_transport_is_refused_at_the_first_direct_call_not_silently_plaintext():
    with Client.from_env({"BLOCKX_COORDINATOR_ADDRS": "127.0.0.1:1"}, direct=True) as c:
        with pytest.raises(BlockxError, match=r"expected all three \(mTLS\), or BLOCKX_INSECURE=1 to choose plaintext, got none") as ei:
            c.invoke(source=DOUBLE, args=1)
        assert ei.value.code == "INVALID_ARGUMENT"
    # The proxy's Unix socket is local: it needs neither.
    assert Client.from_env({"PROXY_SOCKET_PATH": "/run/x.sock"}).via_proxy
