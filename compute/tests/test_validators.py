"""compute/validators.py: pure field rules, as tables."""
import pytest
from django.core.exceptions import ValidationError

from compute import validators
from compute.tests.factories import kubeconfig


def raises(check, *args) -> str | None:
    """The rule's first message, or None when the value passes."""
    try:
        check(*args)
    except ValidationError as exc:
        return exc.messages[0]
    return None


@pytest.mark.parametrize(
    "value, ok",
    [("default", True), ("ml-team", True), ("a", True), ("a" * 63, True), ("a" * 64, False), ("ML", False),
     ("ml_team", False), ("-ml", False), ("ml-", False), ("", False), ("ml.team", False)],
)
def test_namespace(value, ok):
    assert (raises(validators.validate_namespace, value) is None) is ok


@pytest.mark.parametrize(
    "selector, problem",
    [
        ({}, None),
        ({"gpu": "a100"}, None),
        ({"kubernetes.io/os": "linux"}, None),
        ({"node.kubernetes.io/instance-type": "Standard_NC6s_v3"}, None),
        ({"pool": ""}, None),
        ({"pool_name.x-1": "v_1.2-3"}, None),
        ({"bad key": "x"}, "Label key 'bad key' is invalid"),
        ({"-gpu": "x"}, "Label key '-gpu' is invalid"),
        ({"a" * 64: "x"}, "is invalid"),
        ({"Bad_Prefix/gpu": "x"}, "invalid prefix"),
        ({"/gpu": "x"}, "invalid prefix"),
        ({"a/b/gpu": "x"}, "invalid prefix"),
        ({"example.com/": "x"}, "is invalid"),
        ({"gpu": "a100!"}, "Label value 'a100!' is invalid"),
        ({"gpu": "x" * 64}, "is invalid"),
        ({"gpu": "-a"}, "is invalid"),
    ],
)
def test_node_selector(selector, problem):
    message = raises(validators.validate_node_selector, selector)
    assert message is None if problem is None else problem in message


def test_kubeconfig_summary_picks_current_context_and_its_server():
    summary = validators.kubeconfig_summary(kubeconfig(server="https://k8s.example.com:6443"), None)
    assert summary == {"context": "dev", "server": "https://k8s.example.com:6443", "namespace": "ml"}


def test_kubeconfig_summary_named_context_wins_over_current():
    text = kubeconfig(context="prod", current="other")
    assert validators.kubeconfig_summary(text, "prod")["context"] == "prod"


EXEC_USER = (
    "kind: Config\ncurrent-context: dev\ncontexts: [{name: dev, context: {cluster: dev, user: dev}}]\n"
    "clusters: [{name: dev, cluster: {server: 'https://k8s.example.com'}}]\n"
    "users: [{name: dev, user: {exec: {command: /bin/sh}}}]\n"
)


@pytest.mark.parametrize(
    "text, context, problem",
    [
        ("clusters: [unclosed", None, "not valid YAML"),
        ("just a string", None, "mapping of kind Config"),
        ("- a\n- list", None, "mapping of kind Config"),
        ("kind: Pod\n", None, "mapping of kind Config"),
        (kubeconfig(current=False), None, "no current-context"),
        (kubeconfig(), "prod", "Context 'prod' is not in the kubeconfig (it has: dev)"),
        (kubeconfig(current="prod"), None, "Context 'prod' is not in the kubeconfig"),
        ("kind: Config\ncurrent-context: dev\ncontexts: {dev: {}}\n", None, "`contexts` must be a list"),
        (
            "kind: Config\ncurrent-context: dev\ncontexts: [{name: dev, context: {cluster: nope, user: dev}}]\n"
            "users: [{name: dev}]\n", None, "names a cluster that the kubeconfig does not define",
        ),
        (
            "kind: Config\ncurrent-context: dev\ncontexts: [{name: dev, context: {cluster: dev, user: nope}}]\n"
            "clusters: [{name: dev, cluster: {server: 'https://a'}}]\nusers: [{name: dev}]\n", None,
            "names a user that the kubeconfig does not define",
        ),
        (kubeconfig(server="ftp://k8s.example.com"), None, "must start with https://"),
        (kubeconfig(server="k8s.example.com:6443"), None, "must start with https://"),
        (kubeconfig(server=""), None, "is missing"),
        (kubeconfig(server="https://k8s.example.com/prefix"), None, "has a path (/prefix)"),
        (kubeconfig(server="https://admin:hunter2@k8s.example.com"), None, "carries credentials"),
        (EXEC_USER, None, "uses `exec`, which runs a command on Dockyard's worker"),
        (EXEC_USER.replace("exec: {command: /bin/sh}", "tokenFile: /etc/shadow"), None, "uses `tokenFile`, which reads a file"),
        (EXEC_USER.replace("exec: {command: /bin/sh}", "client-key: /root/.ssh/id_rsa"), None, "uses `client-key`"),
    ],
)
def test_kubeconfig_problems(text, context, problem):
    message = raises(validators.kubeconfig_summary, text, context)
    assert message is not None and problem in message


@pytest.mark.parametrize(
    "value, minutes",
    [("PT15M", 15), ("PT1H", 60), ("PT1H30M", 90), ("P1D", 1440), ("P3D", 4320), ("P1DT2H", 1560),
     ("PT900S", 15), ("PT0M", 0)],
)
def test_iso_duration_minutes(value, minutes):
    assert validators.iso_duration_minutes(value) == minutes


@pytest.mark.parametrize(
    "value, problem",
    [("P", "not an ISO-8601 duration"), ("PT", "not an ISO-8601 duration"), ("30M", "not an ISO-8601 duration"),
     ("PT30", "not an ISO-8601 duration"), ("thirty minutes", "not an ISO-8601 duration"), ("", "not an ISO-8601 duration"),
     ("PT-5M", "not an ISO-8601 duration"), ("PT90S", "whole number of minutes")],
)
def test_iso_duration_problems(value, problem):
    assert problem in raises(validators.iso_duration_minutes, value)


@pytest.mark.parametrize("minutes, ok", [(14, False), (15, True), (60, True), (4320, True), (4321, False), (0, False), (-1, False)])
def test_idle_minutes_between_15_minutes_and_3_days(minutes, ok):
    assert (raises(validators.validate_idle_minutes, minutes) is None) is ok


@pytest.mark.parametrize(
    "name, ok", [("UTC", True), ("Europe/Berlin", True), ("Asia/Seoul", True), ("Mars/Olympus", False), ("", False), ("../etc/passwd", False)]
)
def test_time_zone(name, ok):
    assert (raises(validators.validate_time_zone, name) is None) is ok


@pytest.mark.parametrize(
    "expression, ok",
    [("0 18 * * 1-5", True), ("*/15 * * * *", True), ("0 8 * * MON", True), ("61 * * * *", False),
     ("0 25 * * *", False), ("* * * *", False), ("0 0 * * * *", False), ("every day", False), ("", False)],
)
def test_cron(expression, ok):
    assert (raises(validators.validate_cron, expression) is None) is ok


@pytest.mark.parametrize(
    "value, ok", [("2026-03-10T21:00:00", True), ("2026-03-10", True), ("2026-03-10T21:00:00+09:00", True),
                  ("tomorrow", False), ("2026-13-01", False), ("", False)]
)
def test_start_time(value, ok):
    assert (raises(validators.validate_start_time, value) is None) is ok


@pytest.mark.parametrize(
    "value, ok",
    [
        ("/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Databricks/workspaces/dbx", True),
        ("/SUBSCRIPTIONS/0000/RESOURCEGROUPS/rg/PROVIDERS/Microsoft.Batch/batchAccounts/b", True),
        ("/subscriptions/0000/resourceGroups/rg", False),
        ("subscriptions/0000/resourceGroups/rg/providers/x/y", False),
        ("https://portal.azure.com/", False),
        ("", False),
    ],
)
def test_resource_id(value, ok):
    assert (raises(validators.validate_resource_id, value) is None) is ok
