"""The web tier: gunicorn with uvicorn workers (`gunicorn controlplane.asgi:application -k uvicorn_worker.UvicornWorker`).

Under ASGI a followed log waits on the event loop instead of holding a worker thread (controlplane/streams.py).
Path prefixes in DOCKYARD_ASGI_MOUNTS go to ASGI apps of their own before Django (named by dotted path, as
ROOT_URLCONF names the URLs, so the framework imports no app): the compute instances' browser proxy, which streams
HTTP and relays WebSockets, which Django's handler does not do.
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
# Django runs each request's synchronous code in a thread of its own under ASGI: a persistent connection would be
# left open by a thread that is gone (Django's docs: disable persistent connections under ASGI).
os.environ.setdefault("DATABASE_CONN_MAX_AGE", "0")
django_application = get_asgi_application()

from django.conf import settings  # noqa: E402  (after the setup above)
from django.utils.module_loading import import_string  # noqa: E402

MOUNTS = [(prefix, import_string(path)) for prefix, path in settings.DOCKYARD_ASGI_MOUNTS.items()]


async def application(scope, receive, send):
    """Mounted prefixes first (HTTP and WebSockets), everything else to Django; WebSockets elsewhere are refused."""
    if scope["type"] in ("http", "websocket"):
        path = scope.get("path", "")
        for prefix, app in MOUNTS:
            if path.startswith(prefix):
                return await app(scope, receive, send)
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.close", "code": 1008})
        return
    return await django_application(scope, receive, send)
