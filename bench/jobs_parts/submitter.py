"""Job YAML POSTed through the Django test client (the whole API stack, no socket), from a few threads."""
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection
from django.test import Client

from bench.support.open_loop import open_loop
from bench.support.seeding import WORKSPACE

JOB_YAML = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
name: {name}
display_name: bench {name}
experiment_name: bench
description: A benchmark job.
tags:
  team: bench
command: python train.py --epochs ${{{{inputs.epochs}}}} --lr 0.01
inputs:
  epochs: 3
environment:
  image: python:3.11-slim
environment_variables:
  PYTHONUNBUFFERED: "1"
compute: azureml:{compute}
resources:
  instance_count: 1
"""


class Submitter:
    """POSTs of job YAML through the Django test client, from `threads` threads (each its own client and DB connection)."""

    def __init__(self, token: str, threads: int):
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        self.threads = threads
        self.url = f"/api/v1/workspaces/{WORKSPACE}/jobs/"

    def post(self, client: Client, name: str, compute: str):
        response = client.post(self.url, data=JOB_YAML.format(name=name, compute=compute),
                               content_type="application/yaml", **self.auth)
        assert response.status_code == 201, (response.status_code, response.content[:300])
        return response

    def run(self, names: list[str], compute: str, rate: float | None = None) -> dict:
        """POST every name (open loop at `rate`/s when given, else as fast as the threads go); times per name."""

        @contextmanager
        def sender():
            client = Client()  # each thread its own client and database connection
            try:
                yield lambda number, name: self.post(client, name, compute)
            finally:
                connection.close()

        return open_loop(names, sender, self.threads, rate)


@dataclass
class Bench:
    """What every part of a run needs: the options, the bench user, its workspace and the submitter."""

    args: object
    user: object
    workspace: object
    submitter: Submitter
