"""Artifacts as the API shows them: a blob's upload state, snapshots (with their files on a single GET), uploads."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Snapshot

SHA256_HELP = "64 lowercase hexadecimal digits"
MAX_SIZE = 2**63 - 1


class BlobStartSerializer(serializers.Serializer):
    """Start (or resume) an upload: the content's sha256 and its size in bytes."""

    sha256 = serializers.RegexField(r"^[0-9a-f]{64}$", max_length=64, help_text=SHA256_HELP)
    size = serializers.IntegerField(min_value=0, max_value=MAX_SIZE)


class BlobStateSerializer(serializers.Serializer):
    """`complete`: the workspace has the blob (skip its upload); otherwise send bytes from `received` on."""

    sha256 = serializers.CharField(help_text=SHA256_HELP)
    size = serializers.IntegerField()
    received = serializers.IntegerField(help_text="bytes stored so far: the offset of the next chunk")
    complete = serializers.BooleanField()


class SnapshotFileSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="relative, `/` between parts; no `..`, no leading `/`, no backslash")
    sha256 = serializers.RegexField(r"^[0-9a-f]{64}$", max_length=64, help_text="an uploaded blob's sha256")
    mode = serializers.IntegerField(min_value=0, max_value=0o7777, required=False, default=0o644,
                                    help_text="permission bits; kept as 493 (0755) when any execute bit is set, else 420 (0644)")


class SnapshotCreateSerializer(serializers.Serializer):
    """A folder's manifest; every blob must be uploaded first (a 400 MissingBlobs names the others)."""

    files = SnapshotFileSerializer(many=True)


class SnapshotSerializer(serializers.ModelSerializer):
    """A stored folder; `path` is how a job's `code` or an asset's `path` refers to it."""

    path = serializers.CharField(read_only=True, help_text="azureml://uploads/<sha256>")
    created_by = serializers.CharField(source="created_by_name", read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(source="created_at", read_only=True)

    class Meta:
        model = Snapshot
        fields = ["sha256", "path", "size", "file_count", "created_by", "created_on"]
        read_only_fields = fields


class SnapshotDetailSerializer(SnapshotSerializer):
    files = serializers.SerializerMethodField()

    class Meta(SnapshotSerializer.Meta):
        fields = [*SnapshotSerializer.Meta.fields, "files"]
        read_only_fields = fields

    @extend_schema_field(SnapshotFileSerializer(many=True))
    def get_files(self, snapshot) -> list[dict]:
        return [{"path": path, "sha256": sha256, "mode": mode} for path, sha256, mode in snapshot.files]


class UploadSerializer(serializers.Serializer):
    """API.md `uploads/`: the stored folder's path, its sha256 and its size (the files' bytes)."""

    path = serializers.CharField(help_text="azureml://uploads/<sha256>")
    sha256 = serializers.CharField(help_text=SHA256_HELP)
    size = serializers.IntegerField()


class AssetVersionSerializer(serializers.Serializer):
    """What every asset version shows: Azure ML's fields as registered, plus `archived` and who created it when."""

    name = serializers.CharField(read_only=True)
    version = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True)
    tags = serializers.DictField(child=serializers.CharField(), read_only=True)
    archived = serializers.BooleanField(read_only=True, help_text="archived versions leave lists and @latest")
    created_by = serializers.CharField(read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance):
        spec = instance.spec
        body = {"name": instance.name, "version": instance.version, "description": instance.description,
                "tags": instance.tags}
        body.update({name: spec.get(name, default) for name, default in self.spec_defaults().items()})
        body.update({"archived": instance.archived, "created_by": getattr(instance, "created_by_name", None),
                     "created_on": serializers.DateTimeField().to_representation(instance.created_at)})
        return body

    def spec_defaults(self) -> dict:
        """The kind's own fields (from its stored spec) and what each shows when it was not given."""
        return {}


class EnvironmentSerializer(AssetVersionSerializer):
    """An environment version (Azure ML environment YAML), referenced as azureml:<name>:<version>."""

    image = serializers.CharField(read_only=True)
    conda_file = serializers.DictField(read_only=True, allow_null=True, help_text="realised on top of the image")
    os_type = serializers.CharField(read_only=True)
    inference_config = serializers.DictField(read_only=True, allow_null=True)
    properties = serializers.DictField(child=serializers.CharField(), read_only=True)

    def spec_defaults(self) -> dict:
        return {"image": "", "conda_file": None, "os_type": "linux", "inference_config": None, "properties": {}}


class ModelSerializer(AssetVersionSerializer):
    """A model version: `path` is the upload it was registered from (azureml://uploads/<sha256>)."""

    type = serializers.CharField(read_only=True, help_text="custom_model | mlflow_model | triton_model")
    path = serializers.CharField(read_only=True)
    properties = serializers.DictField(child=serializers.CharField(), read_only=True)
    stage = serializers.CharField(read_only=True)

    def spec_defaults(self) -> dict:
        return {"type": "custom_model", "path": "", "properties": {}, "stage": ""}


class DataSerializer(AssetVersionSerializer):
    """A data version: uri_file or uri_folder at an upload (azureml://uploads/<sha256>) or an https:// URL."""

    type = serializers.CharField(read_only=True, help_text="uri_file | uri_folder")
    path = serializers.CharField(read_only=True)

    def spec_defaults(self) -> dict:
        return {"type": "uri_folder", "path": ""}


class AssetCreateSerializer(serializers.Serializer):
    """The fields every asset's YAML has (bodies are checked by assets/specs, one validation path; YAML or JSON)."""

    name = serializers.CharField()
    version = serializers.CharField(required=False, help_text="left out: the next whole number")
    description = serializers.CharField(required=False)
    tags = serializers.DictField(child=serializers.CharField(), required=False)


class EnvironmentCreateSerializer(AssetCreateSerializer):
    image = serializers.CharField()
    conda_file = serializers.DictField(required=False, help_text="inline: channels, dependencies (pip)")


class ModelCreateSerializer(AssetCreateSerializer):
    path = serializers.CharField(help_text="azureml://uploads/<sha256>, as uploads/ answered")
    type = serializers.ChoiceField(["custom_model", "mlflow_model", "triton_model"], required=False)


class DataCreateSerializer(AssetCreateSerializer):
    path = serializers.CharField(help_text="azureml://uploads/<sha256> or an https:// URL")
    type = serializers.ChoiceField(["uri_file", "uri_folder"], required=False)
