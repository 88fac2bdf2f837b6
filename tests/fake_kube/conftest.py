"""The fake API server's own tests get its fixtures here (other suites: see fixtures.py for the root line)."""
from tests.fake_kube.fixtures import fake_kube, fake_kube_session, kube_api, kube_dynamic, make_fake_kube  # noqa: F401
