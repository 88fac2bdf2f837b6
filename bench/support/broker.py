"""The benchmark's Redis: its private Celery queue, and (for a benchmark that owns them) whole databases to flush."""
import os
import sys

import redis

from controlplane.celery import app


def queue_length(queue: str) -> int:
    """Messages waiting in the private queue (Celery's Redis transport keeps a queue as a list)."""
    return redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).llen(queue)


def delete_queue(queue: str) -> None:
    """Delete the private queue's keys only (cleanup: an error is printed, not raised)."""
    try:
        with app.connection_for_write() as broker:
            broker.default_channel.client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real error
        print(f"could not delete the Redis keys of {queue}: {exc}", file=sys.stderr)


def flush_databases() -> None:
    """FLUSHDB the broker's and the cache's Redis databases: only for a benchmark whose own they are."""
    for url in (os.environ["CELERY_BROKER_URL"], os.environ["REDIS_URL"]):
        redis.Redis.from_url(url).flushdb()
