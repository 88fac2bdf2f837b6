"""Posting Azure ML YAML documents to one collection route: what was stored, or the 400's reason at a field."""
from dataclasses import dataclass

from workspaces.models import AuditEvent


@dataclass(frozen=True)
class YamlRoute:
    """A collection URL, the text every document starts with, and the models a refusal must leave untouched."""

    url: str
    models: tuple
    head: str = ""

    def post(self, api, text: str):
        return api.post(self.url, self.head + text, content_type="application/yaml")

    def created(self, api, text: str) -> dict:
        response = self.post(api, text)
        assert response.status_code == 201, response.json()
        return response.json()

    def refused(self, api, text: str, target: str) -> str:
        """The 400's message at `target`; nothing is written."""
        before = self._counts()
        response = self.post(api, text)
        assert response.status_code == 400, response.json()
        details = {row["target"]: row["message"] for row in response.json()["error"]["details"]}
        assert target in details, details
        assert self._counts() == before
        return details[target]

    def _counts(self) -> tuple:
        return tuple(model.objects.count() for model in (*self.models, AuditEvent))
