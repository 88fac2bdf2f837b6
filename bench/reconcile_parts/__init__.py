"""bench/reconcile.py's parts: the fake cluster and records (cluster), (a) apply_all, (b) resync, (c) creates, report."""
GOAL_A = 1.2
RAISED = (1e9, 10**9)  # QPS, BURST when the client-side limit is lifted for the measurement
NODES = {"nodes": 2, "gpu_nodes": 1}
RATE, CREATES, WARMUP_CREATES = 20.0, 200, 40
POSTERS = 8  # client threads sending the POSTs (as many as gunicorn has threads)
WORKER_CONCURRENCY, WEB_WORKERS = 2, 2  # as bin/run starts them
WRITE_SQL = ("INSERT", "UPDATE", "DELETE")
