"""The served OpenAPI schema and docs: no generation warnings, the contract's errors and lists, local assets only."""
import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.test import APIClient

ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture
def openapi(db) -> dict:
    response = APIClient().get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return response.json()


def operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def body_schema(response: dict) -> dict:
    return response["content"]["application/json"]["schema"]


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_schema_generates_without_warnings(tmp_path):
    GENERATOR_STATS.reset()  # warnings are counted per process; count only this generation's
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_bearer_tokens_are_an_http_bearer_scheme(openapi):
    assert openapi["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    # A pod's code fetch and outputs upload URLs carry their own signed token in the path and take no other credentials.
    token_authorised = {("GET", "/api/v1/artifacts/fetch/{token}/"), ("POST", "/api/v1/artifacts/outputs/{token}/{rank}/")}
    assert all({"bearerAuth": []} in operation["security"] for method, path, operation in operations(openapi)
               if (method, path) not in token_authorised)
    assert all("security" not in openapi["paths"][path][method.lower()] for method, path in token_authorised)


def test_error_component_is_the_contracts_error_shape(openapi):
    error = resolve(openapi, ERROR_REF)
    body = resolve(openapi, error["properties"]["error"])
    detail = resolve(openapi, body["properties"]["details"]["items"])
    assert error["required"] == ["error"]
    assert sorted(body["required"]) == ["code", "details", "message"]
    assert sorted(detail["required"]) == ["message", "target"]


def test_every_operation_documents_its_errors(openapi):
    for method, path, operation in operations(openapi):
        responses = operation["responses"]
        unsafe = method in ("POST", "PUT", "PATCH", "DELETE")
        expected = {"401", "429"} | ({"400", "403", "409"} if unsafe else set())
        expected |= {"404"} if "{" in path else set()
        expected |= {"400"} if "{compute_name}" in path else set()  # a compute of a type without the capability
        # Whatever a GET gives an ETag to, If-Match guards.
        expected |= {"412"} if unsafe and method != "POST" and "get" in openapi["paths"][path] else set()
        assert expected <= set(responses), (method, path, sorted(responses))
        assert all(body_schema(responses[code]) == ERROR_REF for code in expected), (method, path)
    assert "Retry-After" in openapi["paths"]["/api/v1/workspaces/"]["get"]["responses"]["429"]["headers"]


# GETs below one resource that are not collections: an endpoint's key prefixes, a deployment's plain-text log tail, the
# files of a job's ./outputs (a bounded listing of a folder, as API.md writes it: `[{name, path, size}]`).
NOT_LISTS = ("/online-endpoints/{name}/keys/", "/deployments/{name}/logs/", "/jobs/{name}/outputs/")


def test_lists_document_the_envelope(openapi):
    for method, path, operation in operations(openapi):
        if method != "GET" or path.endswith("}/") or path.endswith(NOT_LISTS):
            continue
        envelope = resolve(openapi, body_schema(operation["responses"]["200"]))
        assert {"count", "next", "previous", "results"} <= set(envelope["properties"]), path
        assert envelope["properties"]["results"]["type"] == "array", path


def test_computes_are_polymorphic_by_type(openapi):
    compute = resolve(openapi, {"$ref": "#/components/schemas/Compute"})
    mapping = compute["discriminator"]["mapping"]
    assert compute["discriminator"]["propertyName"] == "type"
    assert {"kubernetes", "amlcompute", "computeinstance", "virtualmachine", "local"} <= set(mapping)
    assert "local" not in resolve(openapi, {"$ref": "#/components/schemas/ComputeRequest"})["discriminator"]["mapping"]


def test_deleting_a_compute_answers_202_with_the_compute(openapi):
    compute = openapi["paths"]["/api/v1/workspaces/{workspace_name}/computes/{name}/"]["delete"]["responses"]
    assert body_schema(compute["202"]) == {"$ref": "#/components/schemas/Compute"} and "204" not in compute


def test_a_delete_answers_202_with_a_body_or_204_without(openapi):
    for method, path, operation in operations(openapi):
        if method == "DELETE":
            success = {code: response for code, response in operation["responses"].items() if code < "300"}
            assert list(success) in (["202"], ["204"]), path
            if "202" in success:
                assert "content" in success["202"], path
            else:
                assert "content" not in success["204"], path


@pytest.mark.django_db
def test_docs_load_only_local_assets():
    html = APIClient().get("/api/v1/docs/").content.decode()
    assets = re.findall(r"""(?:src|href)=["']([^"']+)""", html)
    # Swagger UI's start-up script is the page's own file (the CSP allows no inline script); the rest is static
    assert "/api/v1/docs/?script=" in assets
    assets.remove("/api/v1/docs/?script=")
    assert assets and all(asset.startswith("/static/") for asset in assets), assets
    assert all(finders.find(asset.removeprefix("/static/")) for asset in assets), assets
    script = APIClient().get("/api/v1/docs/?script=").content.decode()
    assert not re.search(r"https?://", html + script)
    assert '"validatorUrl": null' in script  # no badge fetched from validator.swagger.io


JOBS = "/api/v1/workspaces/{workspace_name}/jobs/"


def parameter_names(operation: dict) -> set[str]:
    return {parameter["name"] for parameter in operation.get("parameters", [])}


def test_job_list_rows_are_the_job_without_its_manifests(openapi):
    listing = openapi["paths"][JOBS]["get"]
    row = resolve(openapi, resolve(openapi, body_schema(listing["responses"]["200"]))["properties"]["results"]["items"])
    single = resolve(openapi, body_schema(openapi["paths"][JOBS + "{name}/"]["get"]["responses"]["200"]))
    assert set(single["properties"]) - set(row["properties"]) == {"manifests"}
    assert "manifests" not in row.get("required", [])
    assert {"status", "compute", "experiment_name", "cursor", "page_size"} <= parameter_names(listing)


def test_job_logs_are_json_pages_a_text_download_or_an_event_stream(openapi):
    logs = openapi["paths"][JOBS + "{name}/logs/"]["get"]
    content = logs["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/plain", "text/event-stream"}
    assert resolve(openapi, content["application/json"]["schema"])["properties"]["results"]["type"] == "array"
    event = content["text/event-stream"]["schema"]  # before OpenAPI 3.2 a stream's schema describes one event
    assert event["properties"]["event"]["enum"] == ["status", "line", "end", "timeout"] and event["required"] == ["event", "data"]
    assert {"cursor", "limit", "follow", "download"} <= parameter_names(logs)


def test_job_events_are_a_list_without_the_job_lists_filters(openapi):
    events = openapi["paths"][JOBS + "{name}/events/"]["get"]
    assert not {"status", "compute", "experiment_name"} & parameter_names(events)
    envelope = resolve(openapi, body_schema(events["responses"]["200"]))
    assert resolve(openapi, envelope["properties"]["results"]["items"])["properties"].keys() == {"time", "type", "reason", "message"}


def test_confirming_a_host_key_takes_the_fingerprint_and_answers_202_with_the_compute(openapi):
    operation = openapi["paths"]["/api/v1/workspaces/{workspace_name}/computes/{name}/confirm-host-key/"]["post"]
    assert body_schema(operation["responses"]["202"]) == {"$ref": "#/components/schemas/Compute"}
    request = resolve(openapi, body_schema(operation["requestBody"]))
    assert request["required"] == ["fingerprint"] and request["properties"]["fingerprint"]["pattern"].startswith("^SHA256")
    assert {"400", "409"} <= set(operation["responses"])


def test_job_actions_answer_202_with_the_job(openapi):
    for path, method in ((JOBS + "{name}/", "delete"), (JOBS + "{name}/cancel/", "post")):
        assert body_schema(openapi["paths"][path][method]["responses"]["202"]) == {"$ref": "#/components/schemas/Job"}, path


def test_creating_a_user_takes_a_name_and_an_email_and_answers_with_the_one_time_link(openapi):
    create = openapi["paths"]["/api/v1/users/"]["post"]
    request = resolve(openapi, create["requestBody"]["content"]["application/json"]["schema"])
    created = resolve(openapi, body_schema(create["responses"]["201"]))
    assert set(request["properties"]) == {"username", "email"} and request["required"] == ["username"]
    assert set(created["properties"]) == {"username", "email", "invitation_url", "invitation_expires_at"}
    assert {"400", "401", "403", "409"} <= set(create["responses"])
    assert set(openapi["paths"]["/api/v1/users/"]) == {"post"}  # no listing of accounts
