"""The browser proxy to compute instances, end to end: a real jupyter-server behind the fake API server's service
proxy (and one on a Unix socket, as the local mode runs it), reached through Dockyard's ASGI app with the studio's
session cookie.

HTTP goes through the ASGI app in process (httpx's ASGITransport); WebSockets through uvicorn serving the same app on a
free loopback port. The records are committed (transactional tests): the proxy reads them from a thread of its own.
"""
import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import uvicorn
import websockets
import yaml
from django.contrib.auth import get_user_model
from django.test import Client
from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1, serialize_msg_to_ws_v1

from compute.choices import ComputeType, InstanceState
from compute.instance_proxy import access
from compute.models import ComputeInstance, ComputeTarget
from compute.services import compute_create
from tests.fake_kube.server import ADMIN_TOKEN
from workspaces.choices import Role
from workspaces.models import Membership
from workspaces.services import workspace_create

from .servers import BASE, KERNEL_PROTOCOL, NAMESPACE, ORIGIN, TOKEN, Jupyter, Web

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_decisions(monkeypatch):
    """Each test decides afresh (a granted decision is otherwise reused for a few seconds)."""
    from compute.instance_proxy import app

    app._decisions.clear()
    yield
    app._decisions.clear()

@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    server = Jupyter(tmp_path_factory.mktemp("jupyter"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local_jupyter():
    # A socket address holds 108 bytes: a short folder of its own, not pytest's long tmp path.
    folder = Path(tempfile.mkdtemp(prefix="dy-"))
    server = Jupyter(folder, sock=str(folder / "j.sock"))
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def people(make_user):
    """ada (the assigned user), bob (another member), oscar (no member), sam (staff); the workspace `ws` is ada's."""
    ada, bob, oscar, sam = make_user("ada"), make_user("bob"), make_user("oscar"), make_user("sam", staff=True)
    workspace = workspace_create(user=ada, name="ws", display_name="WS")
    Membership.objects.create(workspace=workspace, user=bob, role=Role.CONTRIBUTOR)
    return {"ada": ada, "bob": bob, "oscar": oscar, "sam": sam, "workspace": workspace}


def instance(people, *, host: str, state: str = InstanceState.RUNNING) -> ComputeTarget:
    """Compute instance `ci` of ada on `host` (a kubernetes compute's name, or `local`), its token stored."""
    compute = ComputeTarget(workspace=people["workspace"], name="ci", type=ComputeType.COMPUTEINSTANCE,
                            properties={"kubernetes_compute": host, "size": "Standard_DS3_v2"})
    compute.secrets = {"token": TOKEN}
    compute.save()
    ComputeInstance.objects.create(compute=compute, assigned_user=people["ada"], state=state)
    return compute


def serve_instance(people, kube, jupyter, kubeconfig: str) -> ComputeTarget:
    """`ci` on kubernetes compute `k8s` (`kube`): its pod ready behind Service ci-ci, served by the real Jupyter."""
    compute_create(user=people["ada"], workspace=people["workspace"],
                   data={"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig})
    labels = {"dockyard.io/compute-instance": "ci"}
    kube.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ci-ci-0", "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "jupyter", "image": "jupyter:1", "ports": [
            {"name": "jupyter", "containerPort": 8888}, {"name": "vscode", "containerPort": 8080}]}]}})
    kube.create({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "ci-ci", "namespace": NAMESPACE},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [
            {"name": "jupyter", "port": 8888, "targetPort": "jupyter"},
            {"name": "vscode", "port": 8080, "targetPort": "vscode"}]}})
    kube.advance(5)
    kube.serve_service(NAMESPACE, "ci-ci", jupyter.url, port=8888)
    return instance(people, host="k8s")


@pytest.fixture
def on_kube(people, fake_kube, jupyter):
    return serve_instance(people, fake_kube, jupyter, fake_kube.kubeconfig_yaml())


def tls_instance(people, make_fake_kube, jupyter, trusted: bool = True) -> ComputeTarget:
    """The same on an API server that speaks https with its own authority, named `localhost` in the kubeconfig (whose
    authority is another one unless `trusted`)."""
    import base64

    from tests.fake_kube.tls import self_signed, server_context

    cert, key = self_signed("localhost")
    kube = make_fake_kube(tls=server_context(cert, key))
    config = kube.kubeconfig()
    authority = cert if trusted else self_signed("localhost")[0]
    config["clusters"][0]["cluster"] = {"server": f"https://localhost:{kube.port}",
                                        "certificate-authority-data": base64.b64encode(authority).decode()}
    return serve_instance(people, kube, jupyter, yaml.safe_dump(config))


@pytest.fixture
def on_tls_kube(people, make_fake_kube, jupyter):
    return tls_instance(people, make_fake_kube, jupyter)


@pytest.fixture
def on_local(people, local_jupyter, monkeypatch):
    monkeypatch.setattr(access, "local_socket", lambda compute: local_jupyter.sock)
    return instance(people, host="local")


def session_cookie(user) -> dict:
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value}


def call(method: str, path: str, user=None, **kwargs) -> httpx.Response:
    """One request through controlplane.asgi's application, as `user` (signed in to the studio) or anonymous."""
    from controlplane.asgi import application

    cookies = session_cookie(user) if user else None

    async def run():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url=ORIGIN, cookies=cookies) as http:
            return await http.request(method, path, **kwargs)

    return asyncio.run(run())


def assert_no_token(response: httpx.Response) -> None:
    assert TOKEN not in response.text
    assert all(TOKEN not in value for value in response.headers.values())


# HTTP through the cluster's service proxy


def test_the_assigned_user_reaches_jupyter_through_the_service_proxy(on_kube, people, fake_kube):
    response = call("GET", f"{BASE}/api/status", people["ada"])
    assert response.status_code == 200, response.text
    assert set(response.json()) >= {"started", "last_activity", "kernels", "connections"}  # Jupyter's own answer
    assert_no_token(response)
    record = fake_kube.requests.find(resource="services", subresource="proxy")[-1]
    assert record.path == f"/api/v1/namespaces/{NAMESPACE}/services/ci-ci:jupyter/proxy{BASE}/api/status"
    assert record.query["token"] == TOKEN  # the token goes upstream, never to the browser


def test_staff_may_open_anyones_instance(on_kube, people):
    assert call("GET", f"{BASE}/api/status", people["sam"]).status_code == 200


@pytest.mark.parametrize(("who", "status", "code"), [("bob", 403, "Forbidden"), ("oscar", 404, "NotFound")])
def test_another_member_is_refused_and_a_non_member_finds_nothing(on_kube, people, who, status, code):
    response = call("GET", f"{BASE}/api/status", people[who])
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert_no_token(response)


def test_anonymous_pages_go_to_sign_in_and_api_calls_get_401(on_kube):
    page = call("GET", f"{BASE}/lab", headers={"Accept": "text/html"})
    assert page.status_code == 302 and page.headers["location"] == f"/login/?next={BASE}/lab"
    api = call("GET", f"{BASE}/api/status")
    assert api.status_code == 401 and api.json()["error"]["code"] == "Unauthorized"


def test_a_wrong_or_ended_session_is_anonymous(on_kube, people):
    from controlplane.asgi import application

    async def run(cookie):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url=ORIGIN,
                                     cookies={"sessionid": cookie}) as http:
            return await http.get(f"{BASE}/api/status")

    assert asyncio.run(run("not-a-session")).status_code == 401
    cookie = session_cookie(people["ada"])["sessionid"]
    people["ada"].set_password("a-new-password-1")  # the session's hash no longer matches
    people["ada"].save()
    assert asyncio.run(run(cookie)).status_code == 401


def test_a_granted_decision_is_reused_for_a_few_seconds_only(on_kube, people, monkeypatch):
    from compute.instance_proxy import app
    from controlplane.asgi import application

    cookies = session_cookie(people["ada"])

    async def status():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url=ORIGIN,
                                     cookies=cookies) as http:
            return (await http.get(f"{BASE}/api/status")).status_code

    assert asyncio.run(status()) == 200
    ComputeInstance.objects.filter(compute=on_kube).update(state=InstanceState.STOPPED)
    assert asyncio.run(status()) == 200  # within DECISION_SECONDS: the same decision
    later = time.monotonic() + app.DECISION_SECONDS + 1
    monkeypatch.setattr(app, "clock", lambda: later)
    assert asyncio.run(status()) == 409  # decided again: stopped


def test_a_stopped_instance_says_its_state(on_kube, people):
    ComputeInstance.objects.filter(compute=on_kube).update(state=InstanceState.STOPPED)
    api = call("GET", f"{BASE}/api/status", people["ada"])
    assert api.status_code == 409
    assert api.json()["error"] == {"code": "InstanceNotRunning", "message": "Compute instance 'ci' is Stopped; start it "
                                   "to open it.", "details": [{"target": "state", "message": "Stopped"}]}
    page = call("GET", f"{BASE}/lab", people["ada"], headers={"Accept": "text/html"})
    assert page.status_code == 409 and "is Stopped" in page.text and page.headers["content-type"].startswith("text/html")


def test_unknown_apps_and_other_computes_are_not_found(on_kube, people):
    assert call("GET", "/instances/ws/ci/rstudio/", people["ada"]).status_code == 404
    assert call("GET", "/instances/ws/k8s/jupyter/api/status", people["ada"]).status_code == 404  # not an instance
    assert call("GET", "/instances/nope/ci/jupyter/api/status", people["sam"]).status_code == 404


def test_unsafe_requests_must_come_from_dockyards_pages(on_kube, people):
    """Jupyter skips its XSRF check for token-authenticated requests, and the proxy adds the token: the Origin is
    checked here instead."""
    refused = call("POST", f"{BASE}/api/contents", people["ada"], json={"type": "notebook"},
                   headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    missing = call("POST", f"{BASE}/api/contents", people["ada"], json={"type": "notebook"})
    assert missing.status_code == 403
    created = call("POST", f"{BASE}/api/contents", people["ada"], json={"type": "notebook"}, headers={"Origin": ORIGIN})
    assert created.status_code == 201, created.text
    assert created.json()["type"] == "notebook"


def test_dockyards_cookies_stay_home_and_the_servers_cookies_stay_on_the_route(on_kube, people, jupyter):
    """Jupyter's login cookie never reaches the browser; Dockyard's session cookie never reaches Jupyter."""
    page = call("GET", f"{BASE}/api/status", people["ada"])
    assert page.status_code == 200, page.text
    cookies = page.headers.get_list("set-cookie")
    assert not any(cookie.startswith("username-") for cookie in cookies), cookies  # Jupyter set one: dropped
    assert_no_token(page)


def test_set_cookie_is_scoped_to_the_instance():
    from compute.instance_proxy.rules import Route, set_cookie

    target = Route("ws", "ci", "jupyter", "/lab")
    dropped = {"sessionid", "csrftoken"}
    assert set_cookie(f"_xsrf=abc; Path={BASE}/; SameSite=Lax", target, dropped) == f"_xsrf=abc; Path={BASE}/; SameSite=Lax"
    assert set_cookie("theme=dark; Path=/; Domain=example.com", target, dropped) == f"theme=dark; Path={BASE}/"
    assert set_cookie("theme=dark; Path=/instances/ws/other/jupyter/", target, dropped) == f"theme=dark; Path={BASE}/"
    assert set_cookie("sessionid=stolen; Path=/", target, dropped) is None  # never Dockyard's own
    assert set_cookie("username-127-0-0-1-8888=x; Path=/", target, dropped) is None  # never a server login
    assert set_cookie("code-server-session=x", Route("ws", "ci", "vscode", ""), dropped) is None


def test_html_links_stay_under_instances(on_kube, people, fake_kube):
    # jupyter-server alone (no JupyterLab) serves few pages; its not-found page is one, with links to its static files
    page = call("GET", f"{BASE}/nowhere", people["ada"], headers={"Accept": "text/html"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert f'href="{BASE}/static/' in page.text
    assert "/api/v1/namespaces" not in page.text
    assert_no_token(page)
    # what the API server sent: its prefix in front of every link (the proxy took it off again)
    direct = httpx.get(f"{fake_kube.url}/api/v1/namespaces/{NAMESPACE}/services/ci-ci:jupyter/proxy{BASE}/nowhere",
                       params={"token": TOKEN}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert f'href="/api/v1/namespaces/{NAMESPACE}/services/ci-ci:jupyter/proxy{BASE}/static/' in direct.text


def test_a_redirect_stays_under_instances_without_the_token(on_kube, people):
    # Jupyter's trailing-slash redirect repeats the query, the token with it
    response = call("GET", f"{BASE}/api/status/", people["ada"], params={"x": "1"})
    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{BASE}/api/status?x=1"
    assert_no_token(response)


def test_the_token_jupyter_writes_into_its_pages_is_scrubbed(on_kube, people):
    page = call("GET", f"{BASE}/", people["ada"], headers={"Accept": "text/html", "Accept-Encoding": "gzip"})
    assert page.status_code == 200 and 'data-jupyter-api-token=""' in page.text  # Jupyter wrote the token there
    assert_no_token(page)


def test_big_downloads_stream(on_kube, people, jupyter):
    (jupyter.root / "big.bin").write_bytes(os.urandom(8 * 2**20))
    response = call("GET", f"{BASE}/files/big.bin", people["ada"])
    assert response.status_code == 200 and len(response.content) == 8 * 2**20
    assert response.content == (jupyter.root / "big.bin").read_bytes()


def test_bodies_over_the_limit_are_refused_before_they_go_upstream(on_kube, people, settings):
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 1000
    settings.DOCKYARD_MAX_BODY_BYTES = 1000
    response = call("PUT", f"{BASE}/api/contents/x.txt", people["ada"], content=b"x" * 3000,
                    headers={"Origin": ORIGIN, "Content-Type": "application/json"})
    assert response.status_code == 413 and response.json()["error"]["code"] == "PayloadTooLarge"


def test_an_unreachable_server_is_a_502_in_dockyards_words(on_kube, people, fake_kube):
    fake_kube.serve_service(NAMESPACE, "ci-ci", None, port=8888)
    response = call("GET", f"{BASE}/api/status", people["ada"])
    assert response.status_code == 502
    assert response.json()["error"] == {"code": "InstanceUnreachable", "details": [], "message": (
        "Compute instance 'ci' cannot be reached through the cluster (its API server answered 503); is its pod ready?")}
    assert "dial tcp" not in response.text  # the cluster's own words are not shown


def test_the_servers_own_errors_pass_through(on_kube, people):
    response = call("GET", f"{BASE}/api/contents/missing.txt", people["ada"])
    assert response.status_code == 404 and response.text == "file or directory '/missing.txt' does not exist"


def code_server_stand_in(environ, start_response):
    """Answers as code-server with HASHED_PASSWORD does: only with the session cookie equal to the hash."""
    from http.cookies import SimpleCookie

    cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
    if "code-server-session" not in cookies or cookies["code-server-session"].value != access.code_server_cookie(TOKEN):
        start_response("302 Found", [("Location", "./login")])
        return [b""]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"path": environ["PATH_INFO"], "cookies": sorted(cookies)}).encode()]


def test_vscode_is_reached_at_its_root_with_its_session_cookie(on_kube, people, fake_kube):
    from tests.fake_kube.backends import wsgi_backend

    session = session_cookie(people["ada"])["sessionid"]
    with wsgi_backend(code_server_stand_in) as url:
        fake_kube.serve_service(NAMESPACE, "ci-ci", url, port=8080)
        response = call("GET", "/instances/ws/ci/vscode/static/x.js",
                        headers={"Cookie": f"sessionid={session}; csrftoken=c; theme=dark"})
    assert response.status_code == 200, response.text
    # code-server serves at its root; Dockyard's cookies stayed home, the browser's own went on
    assert response.json() == {"path": "/static/x.js", "cookies": ["code-server-session", "theme"]}
    assert access.code_server_cookie(TOKEN) not in response.text


# The local mode: the server on a Unix socket


def test_a_local_instance_is_reached_on_its_socket(on_local, people):
    response = call("GET", f"{BASE}/api/contents/hello.txt", people["ada"], params={"content": "1"})
    assert response.status_code == 200, response.text
    assert response.json()["content"] == "hello from the instance\n"
    assert_no_token(response)


def test_a_local_instance_without_a_server_is_503(people, monkeypatch):
    monkeypatch.setattr(access, "local_socket", lambda compute: None)
    instance(people, host="local")
    response = call("GET", f"{BASE}/api/status", people["ada"])
    assert response.status_code == 503 and response.json()["error"]["code"] == "InstanceNotServing"


# WebSockets through uvicorn


@pytest.fixture
def web():
    server = Web()
    yield server
    server.stop()


def execute(ws_url: str, cookie: str, origin: str, code: str) -> str:
    """Run `code` in a kernel over the v1 kernel protocol; returns the execute_result's text/plain."""

    async def run():
        async with websockets.connect(ws_url, origin=origin, subprotocols=[KERNEL_PROTOCOL],
                                      additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
            assert ws.subprotocol == KERNEL_PROTOCOL  # negotiated with Jupyter through the proxy
            msg_id = uuid.uuid4().hex
            header = {"msg_id": msg_id, "username": "ada", "session": uuid.uuid4().hex, "msg_type": "execute_request",
                      "version": "5.3", "date": datetime.now(UTC).isoformat()}
            content = {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                       "allow_stdin": False, "stop_on_error": True}
            parts = [json.dumps(part).encode() for part in (header, {}, {}, content)]
            await ws.send(serialize_msg_to_ws_v1(parts, "shell"))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                channel, parts = deserialize_msg_from_ws_v1(await asyncio.wait_for(ws.recv(), 60))
                header, parent = json.loads(parts[0]), json.loads(parts[1])
                if channel == "iopub" and header["msg_type"] == "execute_result" and parent.get("msg_id") == msg_id:
                    return json.loads(parts[3])["data"]["text/plain"]
            raise AssertionError("no execute_result")

    return asyncio.run(run())


def start_kernel(user) -> str:
    response = call("POST", f"{BASE}/api/kernels", user, json={"name": "python3"}, headers={"Origin": ORIGIN})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_a_kernel_runs_a_cell_through_the_proxy(on_local, people, web):
    kernel = start_kernel(people["ada"])
    cookie = session_cookie(people["ada"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/api/kernels/{kernel}/channels"
    assert execute(url, cookie, f"http://127.0.0.1:{web.port}", "1+1") == "2"


def test_a_kernel_runs_a_cell_through_the_clusters_service_proxy(on_kube, people, web, fake_kube):
    """The API server drops an upgrade's query string (kubernetes#77142): the proxy authenticates the WebSocket with
    Jupyter's login cookie instead of ?token=."""
    kernel = start_kernel(people["ada"])
    cookie = session_cookie(people["ada"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}"
    assert execute(url, cookie, f"http://127.0.0.1:{web.port}", "1+1") == "2"
    upgrade = [record for record in fake_kube.requests.find(resource="services", subresource="proxy")
               if record.status == 101]
    assert upgrade and upgrade[-1].path.endswith(f"/api/kernels/{kernel}/channels")


def test_https_api_servers_are_verified_by_name_for_http_and_websockets(on_tls_kube, people, web):
    """The proxy connects to the address it checked and verifies the certificate against the kubeconfig's name."""
    assert call("GET", f"{BASE}/api/status", people["ada"]).status_code == 200
    kernel = start_kernel(people["ada"])
    cookie = session_cookie(people["ada"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/api/kernels/{kernel}/channels"
    assert execute(url, cookie, f"http://127.0.0.1:{web.port}", "6*7") == "42"


def test_an_api_server_whose_certificate_does_not_verify_is_not_talked_to(people, make_fake_kube, jupyter):
    tls_instance(people, make_fake_kube, jupyter, trusted=False)
    response = call("GET", f"{BASE}/api/status", people["ada"])
    assert response.status_code == 502 and response.json()["error"]["code"] == "InstanceUnreachable"


def test_a_websocket_from_another_origin_is_refused(on_local, people, web):
    kernel = start_kernel(people["ada"])
    cookie = session_cookie(people["ada"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/api/kernels/{kernel}/channels"
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        execute(url, cookie, "https://evil.example", "1+1")
    assert refused.value.response.status_code == 403


def test_a_websocket_of_another_member_is_refused(on_local, people, web):
    kernel = start_kernel(people["ada"])
    cookie = session_cookie(people["bob"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/api/kernels/{kernel}/channels"
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        execute(url, cookie, f"http://127.0.0.1:{web.port}", "1+1")
    assert refused.value.response.status_code == 403


def test_a_terminal_runs_a_command_through_the_clusters_service_proxy(on_kube, people, web):
    terminal = call("POST", f"{BASE}/api/terminals", people["ada"], headers={"Origin": ORIGIN})
    assert terminal.status_code == 200, terminal.text
    cookie = session_cookie(people["ada"])["sessionid"]
    url = f"ws://127.0.0.1:{web.port}{BASE}/terminals/websocket/{terminal.json()['name']}"

    async def run():
        async with websockets.connect(url, origin=f"http://127.0.0.1:{web.port}",
                                      additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
            await ws.send(json.dumps(["stdin", "echo $((6*7))\r"]))
            seen = ""
            deadline = time.monotonic() + 30
            while "42" not in seen and time.monotonic() < deadline:
                kind, *data = json.loads(await asyncio.wait_for(ws.recv(), 30))
                seen += data[0] if kind == "stdout" else ""
            return seen

    assert "42" in asyncio.run(run())


def test_the_web_tier_serves_websockets():
    """uvicorn (bin/run's gunicorn workers) refuses every upgrade unless a WebSocket library is installed."""
    from controlplane.asgi import application

    config = uvicorn.Config(application)
    config.load()
    assert config.ws_protocol_class is not None


def test_an_api_token_is_not_a_browser_session(on_kube, people):
    from workspaces.services import token_create

    _, raw = token_create(user=people["ada"], name="cli")
    response = call("GET", f"{BASE}/api/status", headers={"Authorization": f"Bearer {raw}"})
    assert response.status_code == 401  # the proxy takes the studio's sign-in only


def test_other_websockets_are_refused(web):
    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{web.port}/api/v1/", origin=f"http://127.0.0.1:{web.port}"):
            pass

    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(run())


def test_session_users_are_the_signed_in_ones(people):
    assert access.session_user(None) is None
    cookie = session_cookie(people["ada"])["sessionid"]
    assert access.session_user(cookie) == people["ada"]
    get_user_model().objects.filter(pk=people["ada"].pk).update(is_active=False)
    assert access.session_user(cookie) is None
