"""Long-lived responses (a followed log): a cap per user, and polling that holds no worker thread under ASGI.

A stream is a `step` called again and again: each call reads what is new and returns the chunks to send and the
seconds until the next call (None: the stream ends). Under ASGI (gunicorn's uvicorn workers) the steps run on a
small thread pool shared by every open stream of the process, and the waits are the event loop's: an open stream
holds neither a thread nor a database connection of its own. Under WSGI (runserver, Django's test client) the same
steps run in a plain generator.
"""
import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.core.handlers.asgi import ASGIRequest
from django.db import DatabaseError, connection, connections
from django.http import StreamingHttpResponse
from rest_framework import exceptions, status

Step = Callable[[], tuple[list[str], float | None]]

# A slot whose stream died without giving it back (a killed worker) is free again after this; open streams renew it.
SLOT_SECONDS = 60
RENEW_SECONDS = SLOT_SECONDS / 3
# The reads of every open stream of a worker process share these threads, and so their few database connections.
POLL_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="stream-poll")


class TooManyStreams(exceptions.APIException):
    """429: the user already has DOCKYARD_LOG_STREAMS_PER_USER streams open."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "TooManyRequests"
    wait = SLOT_SECONDS  # DRF's handler sends it as Retry-After


class StreamSlot:
    """One of a user's stream slots: a cache key (Redis in production, so every web process counts) with an expiry."""

    def __init__(self, key: str, token: str):
        self.key, self.token = key, token
        self.renewed = time.monotonic()

    @classmethod
    def take(cls, user) -> "StreamSlot":
        """A free slot of the user's, or TooManyStreams."""
        cap = settings.DOCKYARD_LOG_STREAMS_PER_USER
        token = uuid.uuid4().hex
        for index in range(cap):
            key = f"dockyard:streams:{user.pk}:{index}"
            if cache.add(key, token, SLOT_SECONDS):  # SET NX: two requests never get the same slot
                return cls(key, token)
        raise TooManyStreams(f"You have {cap} log streams open, the most one user may have "
                             "(DOCKYARD_LOG_STREAMS_PER_USER); close one and try again.")

    def renew(self) -> None:
        """Keep the slot while the stream is open (a slot not renewed expires)."""
        if time.monotonic() - self.renewed >= RENEW_SECONDS:
            if not cache.touch(self.key, SLOT_SECONDS):
                cache.add(self.key, self.token, SLOT_SECONDS)  # it expired while the process stalled: take it back
            self.renewed = time.monotonic()

    def give_back(self) -> None:
        if cache.get(self.key) == self.token:  # not a slot that expired and went to another stream since
            cache.delete(self.key)


class SlotStreamingResponse(StreamingHttpResponse):
    """A stream that gives its slot back when closed, even one never read (the chunks' own `finally` never ran)."""

    def __init__(self, chunks, slot: StreamSlot, **kwargs):
        super().__init__(chunks, **kwargs)
        self.slot = slot

    def close(self):
        self.slot.give_back()
        super().close()


def served_async(request) -> bool:
    """The request came through the ASGI handler (DRF's Request wraps Django's)."""
    return isinstance(getattr(request, "_request", request), ASGIRequest)


def stream_response(request, step: Step, slot: StreamSlot, content_type: str) -> StreamingHttpResponse:
    """A response that sends what `step` returns until it says the stream ends, holding `slot` meanwhile."""
    chunks = _async_chunks(step, slot) if served_async(request) else _sync_chunks(step, slot)
    response = SlotStreamingResponse(chunks, slot, content_type=content_type)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the events back
    return response


def _sync_chunks(step: Step, slot: StreamSlot) -> Iterator[str]:
    try:
        while True:
            slot.renew()
            chunks, wait = step()
            yield from chunks
            if wait is None:
                return
            if wait:
                time.sleep(wait)
    finally:
        slot.give_back()


def _pooled_step(step: Step, slot: StreamSlot) -> tuple[list[str], float | None]:
    try:
        slot.renew()
        return step()
    except DatabaseError:
        connection.close()  # this pool thread's connection may be broken: the next step opens a new one
        raise


async def _async_chunks(step: Step, slot: StreamSlot) -> AsyncIterator[str]:
    # The view ran in the request's own thread; its connection would otherwise stay open as long as the stream.
    await sync_to_async(connections.close_all)()
    pooled = sync_to_async(_pooled_step, thread_sensitive=False, executor=POLL_THREADS)
    try:
        while True:
            chunks, wait = await pooled(step, slot)
            for chunk in chunks:
                yield chunk
            if wait is None:
                return
            await asyncio.sleep(wait)
    finally:
        await sync_to_async(slot.give_back, thread_sensitive=False, executor=POLL_THREADS)()
