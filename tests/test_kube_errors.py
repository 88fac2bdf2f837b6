"""controlplane.kube.client sorts what the API server answers into transient and rejected (DESIGN §1), against the fake.

kube-apiserver answers two permanent problems of a server-side apply with a 500 without a reason: the object cannot be
typed (a field of the wrong JSON type in a custom object) or cannot be converted (a quantity that does not parse in a
built-in kind). Retrying either cannot help: both are rejections, not the transient 5xx they look like.
"""
import pytest

from compute.manifests import INSTANCE_TYPE_API_VERSION, instance_type_crd
from controlplane.kube import client as kube
from tests.e2e_support import fresh_client_state


@pytest.fixture
def conn(fake_kube):
    fresh_client_state(fake_kube)
    yield kube.Connection(key=fake_kube.url, kubeconfig=fake_kube.kubeconfig())
    fresh_client_state(fake_kube)


def job(cpu) -> dict:
    container = {"name": "main", "image": "busybox:1.36", "resources": {"limits": {"cpu": cpu}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "q", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}


def test_a_quantity_that_cannot_be_converted_is_rejected(fake_kube, conn):
    with pytest.raises(kube.KubeRejected) as refused:
        kube.apply(conn, job("2 cores"))
    assert (refused.value.status, refused.value.reason) == (422, "Invalid")
    assert str(refused.value).startswith("failed to convert new object (default/q; batch/v1, Kind=Job) to proper "
                                         "version: unable to convert unstructured object to batch/v1, Kind=Job: "
                                         "quantities must match the regular expression")
    assert [r.status for r in fake_kube.requests.find(verb="patch")] == [500]  # the server's answer, one call


def test_a_custom_object_of_the_wrong_json_type_is_rejected(fake_kube, conn):
    kube.apply(conn, instance_type_crd())
    fake_kube.advance(1)
    cr = {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceType", "metadata": {"name": "odd"},
          "spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}}
    with pytest.raises(kube.KubeRejected) as refused:
        kube.apply(conn, cr)
    assert str(refused.value) == (
        "failed to create typed patch object (/odd; amlarc.azureml.com/v1alpha1, Kind=InstanceType): "
        ".spec.resources.limits.nvidia.com/gpu: expected numeric (int or float), got string")


def test_other_500s_stay_transient(fake_kube, conn):
    fake_kube.faults.once("500", verb="patch")
    with pytest.raises(kube.KubeTransient) as transient:
        kube.apply(conn, job("1"))
    assert transient.value.status == 500
    assert kube.apply(conn, job("1"))["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1"
