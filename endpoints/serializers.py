"""Online endpoints and deployments as the API shows them (Azure ML field names; keys never, except once)."""
from rest_framework import serializers

from .models import OnlineDeployment, OnlineEndpoint

DEPLOYMENT_SPEC_FIELDS = ("description", "tags", "type", "model", "model_mount_path", "code_configuration", "environment",
                          "environment_variables", "liveness_probe", "readiness_probe", "request_settings",
                          "scale_settings", "app_insights_enabled")


def scoring_uri(endpoint: OnlineEndpoint, request=None) -> str:
    path = f"/api/v1/workspaces/{endpoint.workspace.name}/online-endpoints/{endpoint.name}/score"
    return request.build_absolute_uri(path) if request is not None else path


def compute_reference(endpoint: OnlineEndpoint) -> str | None:
    """As written: 'local', 'azureml:<kubernetes compute>', or None for a managed endpoint (its placement says where)."""
    if endpoint.is_local or endpoint.is_managed:
        return endpoint.compute_name or None
    return f"azureml:{endpoint.compute_name}"


def endpoint_as_dict(endpoint: OnlineEndpoint, request=None, detail: bool = False) -> dict:
    body = {
        "name": endpoint.name, "description": endpoint.description, "tags": endpoint.tags, "auth_mode": endpoint.auth_mode,
        "compute": compute_reference(endpoint),
        "placement": endpoint.placement if endpoint.is_managed else None,
        "traffic": endpoint.traffic, "mirror_traffic": endpoint.mirror_traffic, **endpoint.extra,
        "scoring_uri": scoring_uri(endpoint, request),
        "provisioning_state": endpoint.provisioning_state, "provisioning_errors": endpoint.provisioning_errors,
        "status": endpoint.status,
        "deployments": sorted(item.name for item in endpoint.deployments.all() if item.provisioning_state != "Deleting"),
        "created_by": endpoint.created_by.username if endpoint.created_by else None,
        "created_on": endpoint.created_at, "updated_on": endpoint.updated_at,
    }
    if detail:
        body["manifests"] = endpoint.manifests
    return body


def deployment_as_dict(deployment: OnlineDeployment, detail: bool = False) -> dict:
    spec = deployment.spec
    body = {
        "name": deployment.name, "endpoint_name": deployment.endpoint.name if detail else spec.get("endpoint_name"),
        **{key: spec[key] for key in DEPLOYMENT_SPEC_FIELDS if key in spec},
        # a local deployment has no instance type (its process runs on the Dockyard host): null, as the studio shows
        "instance_type": deployment.instance_type or None, "instance_count": deployment.instance_count,
        "resources": deployment.resources,
        "placement": deployment.placement or None,
        "provisioning_state": deployment.provisioning_state, "provisioning_errors": deployment.provisioning_errors,
        "status": deployment.status,
        "created_by": deployment.created_by.username if deployment.created_by else None,
        "created_on": deployment.created_at, "updated_on": deployment.updated_at,
    }
    if detail:
        body["manifests"] = deployment.manifests
    return body


class OnlineEndpointSerializer(serializers.Serializer):
    """An Azure ML online endpoint; writes go through endpoints/spec/."""

    name = serializers.CharField(help_text="3–32 letters, digits or '-', starting with a letter.")
    description = serializers.CharField(required=False)
    tags = serializers.DictField(child=serializers.CharField(), required=False)
    auth_mode = serializers.CharField(default="key", help_text="key or aml_token, in any case Azure ML reads (Key, AMLToken).")
    public_network_access = serializers.CharField(required=False, help_text="enabled only (no private endpoints).")
    compute = serializers.CharField(required=False, allow_null=True, help_text="'local' or 'azureml:<kubernetes compute>'; "
                                    "left out (null) for a managed endpoint, which Dockyard places.")
    placement = serializers.DictField(read_only=True, allow_null=True, help_text="Managed endpoints only (else null): kubernetes_compute (the attachment "
                                      "its first deployment fixed; null before), fixed_by and reason.")
    traffic = serializers.DictField(child=serializers.IntegerField(min_value=0, max_value=100), required=False,
                                    help_text="deployment → percent; totals 0 or 100; names existing deployments.")
    mirror_traffic = serializers.DictField(child=serializers.IntegerField(min_value=0, max_value=50), required=False)
    scoring_uri = serializers.CharField(read_only=True)
    provisioning_state = serializers.CharField(read_only=True)
    provisioning_errors = serializers.ListField(child=serializers.DictField(), read_only=True)
    status = serializers.DictField(read_only=True)
    deployments = serializers.ListField(child=serializers.CharField(), read_only=True)
    created_by = serializers.CharField(read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(read_only=True)
    updated_on = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance):
        return endpoint_as_dict(instance, self.context.get("request"), self.context.get("detail", False))


class OnlineEndpointCreatedSerializer(OnlineEndpointSerializer):
    """The create response: the endpoint and its keys, which no other response shows."""

    keys = serializers.DictField(child=serializers.CharField(), read_only=True,
                                 help_text="primaryKey and secondaryKey, shown this once ({} for aml_token).")


class OnlineDeploymentSerializer(serializers.Serializer):
    """An Azure ML Kubernetes or managed online deployment; writes go through endpoints/spec/ and the seed's rules."""

    name = serializers.CharField()
    endpoint_name = serializers.CharField(required=False)
    type = serializers.CharField(required=False, help_text="kubernetes on a Kubernetes endpoint, managed on a managed one "
                                 "(any case, as Azure ML reads it).")
    model = serializers.JSONField(required=False, help_text="azureml:<name>:<version> (or @latest: shown as {reference, "
                                  "name, version, type, path}), or {path: azureml://uploads/<sha256>, type: "
                                  "custom_model|mlflow_model}, or a path on the host (local) or in the image.")
    model_mount_path = serializers.CharField(required=False, help_text="Kubernetes: where a registered or uploaded model "
                                             "is mounted (and AZUREML_MODEL_DIR) instead of "
                                             "/var/azureml-app/azureml-models/<name>/<version>.")
    code_configuration = serializers.DictField(required=False, allow_null=True, help_text="{code, scoring_script}; null for an MLflow model")
    environment = serializers.DictField(help_text="{image, conda_file} on Kubernetes; {venv} optional for local.")
    environment_variables = serializers.DictField(child=serializers.CharField(), required=False)
    instance_type = serializers.CharField(required=False, allow_null=True,
                                          help_text="Kubernetes: an instance type (defaultinstancetype when omitted); managed: "
                                                    "a VM size (required), e.g. Standard_DS3_v2; null on a local deployment.")
    instance_count = serializers.IntegerField(required=False, min_value=1, default=1)
    resources = serializers.DictField(required=False, help_text="{requests: {cpu, memory}, limits: {cpu, memory, nvidia.com/gpu}}")
    liveness_probe = serializers.DictField(required=False)
    readiness_probe = serializers.DictField(required=False)
    request_settings = serializers.DictField(required=False)
    scale_settings = serializers.DictField(required=False)
    app_insights_enabled = serializers.BooleanField(required=False, help_text="stored only: nothing is sent to Application Insights.")
    provisioning_state = serializers.CharField(read_only=True)
    provisioning_errors = serializers.ListField(child=serializers.DictField(), read_only=True)
    status = serializers.DictField(read_only=True)
    placement = serializers.DictField(read_only=True, allow_null=True, help_text="Managed deployments only (else null): compute, compute_type "
                                      "(amlcompute or kubernetes), kubernetes_compute, instance_type, capacity (fits_now, "
                                      "can_scale, at_limit, fits_nodes), engine and pool (a compute cluster's), reason.")
    created_by = serializers.CharField(read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(read_only=True)
    updated_on = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance):
        return deployment_as_dict(instance, self.context.get("detail", False))


class KeysSerializer(serializers.Serializer):
    auth_mode = serializers.CharField()
    keys = serializers.DictField(help_text="per key: prefix and rotated_at (the key itself is shown once, when made).")


class NewKeySerializer(serializers.Serializer):
    auth_mode = serializers.CharField()
    primaryKey = serializers.CharField(required=False, help_text="the new key, shown in this answer only")  # Azure's key names
    secondaryKey = serializers.CharField(required=False, help_text="the new key, shown in this answer only")


class RegenerateKeySerializer(serializers.Serializer):
    key_type = serializers.ChoiceField(choices=["primary", "secondary"], default="primary")
