from django.contrib import admin

from .models import ComputeTarget


@admin.register(ComputeTarget)
class ComputeTargetAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "type", "provisioning_state", "created_at"]
    list_filter = ["type", "provisioning_state"]
    exclude = ["secrets_encrypted"]
    readonly_fields = ["secret_fields", "generation", "observed_generation"]
