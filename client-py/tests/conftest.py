import os

import pytest

from support import Dev, Lane, check_binary

from blockx import Client


@pytest.fixture(scope="session")
def dev():
    check_binary()
    d = Dev()
    yield d
    d.stop()


@pytest.fixture(params=["proxy", "direct"])
def mode(request):
    return request.param


@pytest.fixture
def client(dev, mode):
    # A busy 2-core machine can leave a healthy Worker silent for seconds: a generous
    # lost-Worker bound keeps these tests about results, not about load.
    c = Client.from_env({**dev.env, "BLOCKX_WORKER_LOST_AFTER_MS": "20000"}, direct=(mode == "direct"))
    assert c.via_proxy == (mode == "proxy")
    yield c
    c.close()


@pytest.fixture
def lane(dev):
    l = Lane(dev.env["ETCD_ENDPOINTS"])
    yield l
    l.stop()
