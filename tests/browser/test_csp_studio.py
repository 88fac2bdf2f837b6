"""The studio and the API docs under their Content-Security-Policy (issue 9, item 9) in a real browser.

The `page` fixture fails a test on any console error, and Chromium reports every CSP refusal as one: these pages
load, run htmx and Bootstrap, and render Swagger UI with no inline script and no eval.
"""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in

pytestmark = pytest.mark.browser


def test_the_studio_works_under_its_policy(transactional_db, django_user_model, page):
    django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    answer = page.goto("/login/")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    sign_in(page, "olivia")
    page.get_by_role("textbox", name="Name", exact=True).fill("vision")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_role("heading", name="Compute", exact=True)).to_be_visible()
    # the create form's YAML preview follows a checkbox (htmx's `change` trigger, with no eval-ed event filter)
    page.goto("/w/vision/compute/new/computeinstance/")
    with page.expect_response(re.compile(r"/compute/new/computeinstance/preview/$")) as reply:
        page.locator("label.btn", has_text="Mon").first.click()
    assert reply.value.ok


def test_the_api_docs_render_under_their_policy(transactional_db, page):
    answer = page.goto("/api/v1/docs/")
    assert "style-src 'self' 'unsafe-inline'" in answer.headers["content-security-policy"]
    expect(page.locator("#swagger-ui .information-container")).to_be_visible()
