"""List pagination: page numbers for most lists, counted cursors for jobs and events."""
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.response import Response

from .api import BadRequest


class PagePagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class CountedCursorPagination(CursorPagination):
    """Cursor pages (stable under inserts) that still report the total like the other lists."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = ("-created_at", "-id")

    def paginate_queryset(self, queryset, request, view=None):
        self.count = queryset.count()
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        """A cursor this API did not give out is a bad request naming the parameter, not DRF's 404."""
        try:
            return super().decode_cursor(request)
        except NotFound:
            raise BadRequest("The cursor is not one this API gave out.", code="InvalidCursor", target="cursor") from None

    def get_paginated_response(self, data):
        return Response(
            {"count": self.count, "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_paginated_response_schema(self, schema):
        response = super().get_paginated_response_schema(schema)
        response["properties"]["count"] = {"type": "integer", "example": 123}
        response["required"] = ["count", "results"]
        return response
