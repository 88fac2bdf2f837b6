"""The web tier: gunicorn with uvicorn workers (`gunicorn controlplane.asgi:application -k uvicorn_worker.UvicornWorker`).

Under ASGI a followed log waits on the event loop instead of holding a worker thread (controlplane/streams.py).
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
# Django runs each request's synchronous code in a thread of its own under ASGI: a persistent connection would be
# left open by a thread that is gone (Django's docs: disable persistent connections under ASGI).
os.environ.setdefault("DATABASE_CONN_MAX_AGE", "0")
application = get_asgi_application()
