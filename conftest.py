"""Fixtures shared by every app's tests: users in each role, a workspace, authenticated API clients."""
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from workspaces.choices import Role
from workspaces.models import Membership
from workspaces.services import token_create, workspace_create

pytest_plugins = ["tests.fake_kube.fixtures"]

ROLES = ("anonymous", "outsider", "reader", "contributor", "owner", "staff")


@pytest.fixture(autouse=True)
def fast_test_settings(settings):
    """Settings that only cost time in tests.

    PBKDF2's many rounds would dominate the run time of fixtures that set passwords. Every test client builds
    its own middleware, and WhiteNoise would scan every static file (node_modules included) each time; with
    autorefresh it looks a file up when asked instead.
    """
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.WHITENOISE_AUTOREFRESH = True


@pytest.fixture(autouse=True)
def shared_test_data(settings):
    """Local deployments read code and models only from DOCKYARD_LOCAL_PATHS: the tests share their data folder."""
    settings.DOCKYARD_LOCAL_PATHS = [settings.BASE_DIR / "endpoints" / "tests" / "data"]


@pytest.fixture(autouse=True)
def artifact_folder(settings, tmp_path_factory):
    """Artifact storage (assets/) in the test session's temporary folder, never the checkout's var/."""
    folder = tmp_path_factory.getbasetemp() / "artifacts"
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(folder)}}}


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Throttles count in the cache (Redis in the test runs): one test's failed attempts must not refuse the next's."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def make_user(db):
    def make(username: str, *, staff: bool = False, password: str = "correct-horse-battery"):
        return get_user_model().objects.create_user(
            username=username, password=password, is_staff=staff, is_superuser=staff
        )

    return make


@pytest.fixture
def owner(make_user):
    return make_user("olivia")


@pytest.fixture
def workspace(owner):
    return workspace_create(user=owner, name="team-a", display_name="Team A")


@pytest.fixture
def local_compute(workspace):
    """`workspace` with local compute enabled, as a staff user would (it is off by default).

    Test files that run local jobs or deployments use it for every test: `pytestmark = pytest.mark.usefixtures("local_compute")`.
    """
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    return workspace


@pytest.fixture
def users(make_user, owner, workspace):
    """One user per role around `workspace` (anonymous is None)."""
    people = {"anonymous": None, "owner": owner, "outsider": make_user("oscar"), "staff": make_user("sam", staff=True)}
    for role in (Role.READER, Role.CONTRIBUTOR):
        person = make_user(f"{role}-user")
        Membership.objects.create(workspace=workspace, user=person, role=role)
        people[str(role)] = person
    return people


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        _, raw = token_create(user=user, name="test")
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def api_as(users):
    """api_as("reader") -> an APIClient authenticated with a bearer token of that role's user."""
    return lambda role: client_for(users[role])


@pytest.fixture
def owner_api(owner):
    return client_for(owner)


@pytest.fixture
def planted(settings):
    """A secret where an attacker would look for one: var/admin-credentials-….txt of this installation (removed after)."""
    secret = f"admin:{uuid.uuid4().hex}"
    path = Path(settings.VAR_DIR) / f"admin-credentials-{uuid.uuid4().hex[:8]}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(secret + "\n")
    yield path, secret
    path.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def sshd():
    """A real OpenSSH server on a free loopback port (tests/sshd.py), shared by the session's tests; skipped with the
    reason where OpenSSH is not installed, unless DOCKYARD_REQUIRE_SSHD says it must be (CI)."""
    import os

    from tests import sshd as server

    why = server.available()
    if why:
        if os.environ.get("DOCKYARD_REQUIRE_SSHD"):
            pytest.fail(why)
        pytest.skip(why)
    running = server.start_sshd()
    yield running
    running.close()


@pytest.fixture
def netns_host():
    """A test host of its own network (tests/netns.py): a namespace joined by a veth pair, the real sshd inside on
    10.x.y.2 port 22; removed after the test whatever happened. Skipped with the reason where the machine refuses
    namespaces (not root, no `ip netns`) or OpenSSH is missing; a missing package fails instead under
    DOCKYARD_REQUIRE_SSHD (CI)."""
    import os

    from tests import netns
    from tests import sshd as server

    why = netns.available() or server.available()
    if why:
        if os.environ.get("DOCKYARD_REQUIRE_SSHD") and netns.missing_package(why):
            pytest.fail(why)
        pytest.skip(why)
    with netns.netns_host() as space:
        yield space
