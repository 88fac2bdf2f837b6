"""Clusters are identified by their kube-system namespace uid and hold no credentials; unproven links are dropped."""
from django.db import migrations, models

PROVEN_STATES = ("Succeeded", "Updating")


def unlink_unproven_attachments(apps, schema_editor):
    """Attachments were linked by URL before their check: keep only links that a passing check backs."""
    ComputeTarget = apps.get_model("compute", "ComputeTarget")
    ComputeTarget.objects.filter(cluster__isnull=False).exclude(provisioning_state__in=PROVEN_STATES).update(cluster=None)


class Migration(migrations.Migration):
    dependencies = [("compute", "0002_clusters_and_instance_types")]

    operations = [
        migrations.RemoveField(model_name="cluster", name="credentials_encrypted"),
        migrations.AlterField(model_name="cluster", name="server", field=models.CharField(max_length=500)),
        migrations.AddField(
            model_name="cluster", name="uid", field=models.CharField(blank=True, max_length=64, null=True, unique=True),
        ),
        migrations.RunPython(unlink_unproven_attachments, migrations.RunPython.noop),
    ]
