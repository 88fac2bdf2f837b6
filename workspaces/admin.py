from django.contrib import admin

from .models import ApiToken, AuditEvent, Membership, Workspace


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "display_name", "created_at"]
    search_fields = ["name", "display_name"]
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "expires_at", "last_used_at"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "workspace", "actor_name", "action", "target_type", "target_name"]
    list_filter = ["action", "target_type"]
