"""Request parsers beyond DRF's own."""
import yaml
from rest_framework import exceptions
from rest_framework.parsers import BaseParser


class YAMLParser(BaseParser):
    """Accept YAML bodies: users write computes, jobs and instance types as YAML files."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = yaml.safe_load(stream.read().decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"The body is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise exceptions.ParseError("The YAML body must be a mapping of fields.")
        return data
