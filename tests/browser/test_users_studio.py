"""Accounts in a real browser: an owner is told to ask staff; staff create the user from the members page; the new user
sets a password through the one-time link, signs in, and finds the workspace they were added to."""
import pytest
from playwright.sync_api import expect

from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

PASSWORD = "a-long-and-unusual-passphrase-42"


@pytest.fixture
def people(transactional_db, django_user_model):
    """Olivia owns workspace "vision"; Sam is staff."""
    olivia = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    django_user_model.objects.create_user(username="sam", password="correct-horse-battery", is_staff=True)
    workspace_create(user=olivia, name="vision", display_name="Vision team")


@pytest.fixture
def browser_page(chromium, live_server):
    """browser_page() -> a page in a browser context of its own (its own session), failing the test on any console
    error or 4xx/5xx answer, as the shared `page` fixture does; `browser_page(gone=True)` expects one 404 (a spent link)."""
    contexts, problems = [], []

    def open_page(gone: bool = False):
        context = chromium.new_context(viewport={"width": 1440, "height": 900}, base_url=live_server.url)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        if not gone:
            page.on("console", lambda message: message.type == "error" and problems.append(message.text))
        page.on("response", lambda reply: reply.status >= 400 and not (gone and reply.status == 404)
                and problems.append(f"{reply.status} {reply.url}"))
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not problems, problems


def add_member(page, username: str) -> None:
    page.get_by_placeholder("User name").fill(username)
    page.get_by_role("button", name="Add member").click()


def test_staff_create_a_user_who_sets_a_password_through_the_link_and_signs_in(people, browser_page, screenshot):
    owner = browser_page()
    sign_in(owner, "olivia")
    owner.goto("/w/vision/members/")
    add_member(owner, "alice")
    expect(owner.locator(".invalid-feedback")).to_contain_text("ask a staff user to create the account")
    expect(owner.locator("#create-missing-user")).to_have_count(0)
    screenshot(owner, "users-01-owner-told-to-ask-staff")

    staff = browser_page()
    sign_in(staff, "sam")
    staff.goto("/w/vision/members/")
    add_member(staff, "alice")
    expect(staff.locator(".invalid-feedback")).to_contain_text("There is no user named 'alice': create the account first.")
    screenshot(staff, "users-02-staff-offered-to-create")
    staff.locator("#create-missing-user").click()
    expect(staff.get_by_label("User name")).to_have_value("alice")
    staff.get_by_label("E-mail (optional)").fill("alice@example.com")
    staff.get_by_role("button", name="Create user").click()
    link = staff.locator("#invitation-link")
    expect(staff.locator(".new-invitation")).to_contain_text("User alice was created")
    url = link.input_value()
    assert "/invitation/" in url
    screenshot(staff, "users-03-link-shown-once")
    staff.get_by_role("link", name="Add alice to vision").click()
    expect(staff.get_by_placeholder("User name")).to_have_value("alice")
    staff.get_by_role("button", name="Add member").click()
    expect(staff.locator('[data-member="alice"]')).to_be_visible()

    invited = browser_page()
    invited.goto(url)
    expect(invited.locator("#invited-user")).to_have_text("alice")
    invited.get_by_label("New password", exact=True).fill(PASSWORD)
    invited.get_by_label("New password again").fill(PASSWORD + "-typo")
    invited.get_by_role("button", name="Set password").click()
    expect(invited.locator(".invalid-feedback")).to_contain_text("The two passwords differ.")
    screenshot(invited, "users-04-set-password-mismatch")
    invited.get_by_label("New password", exact=True).fill(PASSWORD)
    invited.get_by_label("New password again").fill(PASSWORD)
    invited.get_by_role("button", name="Set password").click()
    expect(invited.get_by_role("status")).to_contain_text("Your password is set, alice")
    expect(invited.get_by_label("User name")).to_have_value("alice")
    screenshot(invited, "users-05-sign-in-after-setting")
    invited.get_by_label("Password").fill(PASSWORD)
    invited.get_by_role("button", name="Sign in").click()
    expect(invited.locator("main")).to_contain_text("Vision team")  # the workspace alice was added to
    screenshot(invited, "users-06-signed-in")

    again = browser_page(gone=True)
    again.goto(url)  # the link is spent
    expect(again.locator("#invitation-gone")).to_contain_text("cannot be used")
    screenshot(again, "users-07-link-spent")
