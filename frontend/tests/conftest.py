import pytest
from django.test import Client


@pytest.fixture
def client_as(users):
    """client_as("reader") -> a Django test client with a session of that role's user (anonymous: not logged in)."""

    def make(role: str) -> Client:
        client = Client()
        if users[role] is not None:
            client.force_login(users[role])
        return client

    return make


@pytest.fixture
def owner_client(client_as):
    return client_as("owner")
