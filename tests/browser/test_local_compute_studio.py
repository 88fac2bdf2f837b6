"""The studio's local-compute switch: staff turn it on for a workspace, members see its state and no switch."""
import pytest
from playwright.sync_api import expect

from workspaces.models import AuditEvent, Workspace
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser


def test_staff_enable_local_compute_and_the_owner_sees_it(transactional_db, django_user_model, page, screenshot):
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    django_user_model.objects.create_user(username="sam", password="correct-horse-battery", is_staff=True)
    workspace_create(user=owner, name="vision", display_name="Vision team")

    sign_in(page, "olivia")
    page.goto("/w/vision/members/")
    card = page.locator("#local-compute")
    expect(card.get_by_text("Off")).to_be_visible()
    expect(card.get_by_label("Allow local compute")).to_have_count(0)  # owners see the state, not the switch

    page.context.clear_cookies()
    sign_in(page, "sam")
    page.goto("/w/vision/members/")
    card.get_by_label("Allow local compute").check()
    card.get_by_role("button", name="Save").click()
    expect(card.get_by_text("Enabled")).to_be_visible()
    expect(card).to_contain_text("without network access")
    screenshot(page, "local-compute-enabled")
    assert Workspace.objects.get(name="vision").local_compute_enabled
    assert AuditEvent.objects.filter(workspace__name="vision", verb="local-compute", actor_name="sam").exists()

    page.context.clear_cookies()
    sign_in(page, "olivia")
    page.goto("/w/vision/members/")
    expect(card.get_by_text("Enabled")).to_be_visible()
    expect(card.get_by_label("Allow local compute")).to_have_count(0)
    screenshot(page, "local-compute-owner-view")
