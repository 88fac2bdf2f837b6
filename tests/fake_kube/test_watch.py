"""Watch streams through kubernetes.watch.Watch: initial state, replay, live events, selectors, 410, bookmarks."""
import threading

import pytest
from kubernetes import client, watch


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


def _collect(stream, count, w):
    events = []
    for event in stream:
        events.append((event["type"], event["object"].metadata.name if hasattr(event["object"], "metadata")
                       else event["raw_object"]["metadata"].get("name")))
        if len(events) == count:
            w.stop()
    return events


def test_watch_without_resource_version_starts_with_the_current_state(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_config_map, "default", timeout_seconds=5), 2, w)
    assert sorted(events) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_from_a_resource_version_replays_changes_in_order(core):
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"v": "1"}})
    core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("a", "default")
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=5)
    assert _collect(stream, 3, w) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_live_events_arrive_while_watching(core):
    start = core.list_namespaced_config_map("default").metadata.resource_version
    w = watch.Watch()
    received = []

    def consume():
        received.extend(_collect(w.stream(core.list_namespaced_config_map, "default", resource_version=start,
                                          timeout_seconds=5), 2, w))

    thread = threading.Thread(target=consume)
    thread.start()
    core.create_namespaced_config_map("default", {"metadata": {"name": "live"}})
    core.delete_namespaced_config_map("live", "default")
    thread.join(timeout=10)
    assert received == [("ADDED", "live"), ("DELETED", "live")]


def test_label_selected_watch_sees_objects_leave_the_selection(core):
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "x", "labels": {"team": "a"}}})
    core.patch_namespaced_config_map("x", "default", {"metadata": {"labels": {"team": "b"}}})
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_config_map, "default", label_selector="team=a", resource_version=start,
                      timeout_seconds=5)
    assert _collect(stream, 2, w) == [("ADDED", "x"), ("DELETED", "x")]


def test_too_old_resource_version_is_410_expired(fake_kube, core):
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    fake_kube.compact()
    w = watch.Watch()
    with pytest.raises(client.ApiException) as caught:
        list(w.stream(core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=5))
    assert caught.value.status == 410 and "too old resource version" in caught.value.reason


def test_watch_ends_at_timeout_seconds(core):
    w = watch.Watch()
    assert list(w.stream(core.list_namespaced_config_map, "kube-public", timeout_seconds=1)) == []


def test_bookmarks_when_asked(make_fake_kube):
    from tests.fake_kube.fixtures import api_client
    kube = make_fake_kube(bookmark_interval=0.1)
    with api_client(kube) as api:
        core = client.CoreV1Api(api)
        rv = core.list_namespaced_config_map("default").metadata.resource_version
        w = watch.Watch()
        for event in w.stream(core.list_namespaced_config_map, "default", resource_version=rv,
                              allow_watch_bookmarks=True, timeout_seconds=5):
            assert event["type"] == "BOOKMARK" and event["raw_object"]["metadata"]["resourceVersion"] == rv
            w.stop()


def test_dynamic_client_watch(kube_dynamic, core):
    jobs = kube_dynamic.resources.get(api_version="v1", kind="ConfigMap")
    core.create_namespaced_config_map("default", {"metadata": {"name": "dyn"}})
    w = watch.Watch()
    for event in jobs.watch(namespace="default", name="dyn", timeout=5, watcher=w):
        assert event["type"] == "ADDED" and event["object"].metadata.name == "dyn"
        w.stop()
