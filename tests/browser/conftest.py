"""Headless Chromium (the system one) for the studio's browser tests."""
import os
from pathlib import Path

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from controlplane.celery import app as celery_app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@pytest.fixture
def chromium(monkeypatch):
    """A headless browser; skipped without /usr/bin/chromium unless DOCKYARD_REQUIRE_BROWSER=1 (CI) says it must run."""
    if not CHROMIUM.exists():
        if os.environ.get("DOCKYARD_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing and DOCKYARD_REQUIRE_BROWSER=1.")
        pytest.skip(f"{CHROMIUM} is missing")
    # Playwright's sync API marks an event loop as running in this thread; the test's own ORM calls are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        # While Playwright runs, Django sees an event loop and gives the test's ORM calls a connection of their own;
        # close it here, where it is still visible, or it outlives the test and blocks dropping the test database.
        connections.close_all()
        browser.close()


@pytest.fixture
def eager_reconcile():
    """Run reconcile tasks in the web server's thread after commit, as a worker would, so states settle."""
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


@pytest.fixture
def screenshot():
    """screenshot(page, "name") -> test-artifacts/screenshots/name.png (git-ignored), full page."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return lambda page, name: page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


@pytest.fixture
def page(chromium, live_server):
    """A page of the live server that fails the test on any console error or 4xx/5xx answer (assets, htmx calls)."""
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("response", lambda reply: reply.status >= 400 and problems.append(f"{reply.status} {reply.url}"))
    yield page
    context.close()
    assert not problems, problems  # no missing asset, no script error, no failed htmx call


def sign_in(page, username: str, password: str = "correct-horse-battery") -> None:
    page.goto("/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
