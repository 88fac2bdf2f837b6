"""pytest fixtures: a started FakeKube per test (or per session) and kubernetes clients pointed at it.

Root conftest.py registration: `pytest_plugins = ["tests.fake_kube.fixtures"]`.
"""
from __future__ import annotations

import pytest
from kubernetes import client, config
from kubernetes.dynamic import DynamicClient

from .server import ADMIN_TOKEN, FakeKube

DEFAULT_NODES = {"nodes": 2, "gpu_nodes": 1}


def api_client(kube: FakeKube, token: str = ADMIN_TOKEN, retries: bool = False, namespace: str | None = None,
               **configuration) -> client.ApiClient:
    """A real kubernetes ApiClient for the fake.

    urllib3 retries are off by default: its default Retry silently re-sends idempotent requests after
    connection errors and after 429/503 answers that carry Retry-After, which would hide faults from tests.
    """
    cfg = client.Configuration()
    config.load_kube_config_from_dict(kube.kubeconfig(token=token, namespace=namespace), client_configuration=cfg)
    if not retries:
        cfg.retries = False
    for key, value in configuration.items():
        setattr(cfg, key, value)
    return client.ApiClient(cfg)


def dynamic_client(kube: FakeKube, cache_dir, **kwargs) -> DynamicClient:
    """A DynamicClient with its own discovery cache file (the default one is shared per host:port in /tmp)."""
    return DynamicClient(api_client(kube, **kwargs), cache_file=str(cache_dir / f"discovery-{kube.port}.json"))


@pytest.fixture
def make_fake_kube():
    """Factory: start FakeKubes with any options; all are stopped after the test."""
    started: list[FakeKube] = []

    def make(**options) -> FakeKube:
        kube = FakeKube(**{**DEFAULT_NODES, **options}).start()
        started.append(kube)
        return kube

    yield make
    for kube in started:
        kube.stop()
    errors = [e for kube in started for e in kube.server_errors]
    assert not errors, "the fake API server failed internally:\n" + "\n".join(errors)


@pytest.fixture
def fake_kube(make_fake_kube) -> FakeKube:
    """A fresh fake cluster: 2 CPU nodes (8 cpu, 32Gi) and 1 GPU node (4 nvidia.com/gpu), manual clock."""
    return make_fake_kube()


@pytest.fixture(scope="session")
def fake_kube_session():
    """One fake cluster for a whole session (tests must use their own namespaces and names)."""
    kube = FakeKube(**DEFAULT_NODES).start()
    yield kube
    kube.stop()


@pytest.fixture
def kube_api(fake_kube) -> client.ApiClient:
    """A kubernetes ApiClient for `fake_kube` (admin token, no urllib3 retries)."""
    with api_client(fake_kube) as api:
        yield api


@pytest.fixture
def kube_dynamic(fake_kube, tmp_path) -> DynamicClient:
    """A DynamicClient for `fake_kube` with a private discovery cache."""
    return dynamic_client(fake_kube, tmp_path)
