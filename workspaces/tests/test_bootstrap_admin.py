"""bootstrap_admin: the first start makes the admin, a token and a starter workspace with local compute, and shows the
login once; later starts only say where it is kept."""
import stat
from io import StringIO

from django.core.management import call_command
from rest_framework.test import APIClient

from workspaces.models import AuditEvent, Workspace


def start(path) -> str:
    out = StringIO()
    call_command("bootstrap_admin", "--credentials", str(path), "--url", "http://127.0.0.1:8000/", stdout=out)
    return out.getvalue()


def test_the_first_start_prints_the_login_once_and_later_starts_never(db, tmp_path, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = True
    path = tmp_path / "admin-credentials.txt"
    first = start(path)
    saved = path.read_text()
    password = saved.split("password: ")[1].split()[0]
    token = saved.split("api token: ")[1].split()[0]
    assert password in first and token in first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    for _ in range(2):
        later = start(path)
        assert password not in later and token not in later
        assert str(path) in later
    assert path.read_text() == saved  # the file is kept as it was

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    starter = client.get("/api/v1/workspaces/starter/").json()
    assert (starter["allow_local_compute"], starter["role"]) == (True, "owner")


def test_a_job_runs_in_the_starter_workspace_at_once(db, tmp_path, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = True
    start(tmp_path / "credentials")
    token = (tmp_path / "credentials").read_text().split("api token: ")[1].split()[0]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.post("/api/v1/workspaces/starter/jobs/", {"command": "echo hi", "compute": "local"}, format="json")
    assert response.status_code == 201, response.content
    event = AuditEvent.objects.get(workspace__name="starter", verb="local-compute")
    assert (event.actor_name, event.changes) == ("admin", {"local_compute_enabled": [False, True]})


def test_with_local_compute_off_on_the_server_the_starter_has_none(db, tmp_path, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    out = start(tmp_path / "credentials")
    assert "local compute is off on this server" in out
    assert Workspace.objects.get(name="starter").local_compute_enabled is False


def test_a_deleted_starter_is_not_made_again(db, tmp_path):
    start(tmp_path / "credentials")
    Workspace.objects.filter(name="starter").delete()
    start(tmp_path / "credentials")
    assert not Workspace.objects.filter(name="starter").exists()
