"""bench/jobs.py's parts: the cluster side, the worker, the submitter, (a) post, (b) queued, (c) at_rate, --split.

Importable before Django is set up (bench/jobs.py takes WORK from here for the environment).
"""
import os
import tempfile
from pathlib import Path

GOAL_B, GOAL_C = 1.3, 1.0
SHIPPED = (20.0, 40)  # DOCKYARD_KUBE_QPS / BURST defaults (checked against settings in bench/jobs.py)
RAISED_OFF = (1e9, 10**9)  # the limit lifted, for the in-process measurements
NAMESPACE = "default"
QUEUE_PREFIX = "dockyard-bench-jobs"
WORKER_NAME = f"bench-jobs-{os.getpid()}"
WORK = Path(tempfile.mkdtemp(prefix="dy-bench-jobs-"))
