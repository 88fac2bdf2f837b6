"""The printed report of each part, and its summary lines."""
import statistics

from bench.reconcile_parts import GOAL_A, POSTERS, RAISED, RATE, WEB_WORKERS, WORKER_CONCURRENCY
from bench.reconcile_parts.cluster import CONFIGURED
from bench.support.report import percentile, verdict
from compute.tasks import BATCH


def report_a(a: dict) -> list[str]:
    n, samples, split = a["n"], a["samples"], a["split"]
    wall = {kind: statistics.median(t.wall for t in runs) for kind, runs in samples.items()}
    cpu = {kind: statistics.median(t.cpu for t in runs) for kind, runs in samples.items()}
    paired = {kind: statistics.median(t.wall / r.wall for t, r in zip(samples[kind], samples["raw"], strict=False))
              for kind in ("limited", "raised", "per-record")}
    raw, limited, raised = wall["raw"], wall["limited"], wall["raised"]
    qps, burst = CONFIGURED
    print(f"\n(a) reconcile-all of {n} instance types (batches of {BATCH}) ÷ raw server-side apply of the same {n} manifests "
          f"(medians; {len(samples['raw'])} raw, {len(samples['raised'])} raised, {len(samples['limited'])} limited rounds)")
    print(f"    raw apply (plain ApiClient, no limiter, no DB) : {raw:6.2f} s  ({raw / n * 1000:.2f} ms per object; "
          f"CPU of this process {cpu['raw']:.2f} s)")
    print(f"    reconcile-all, limit as configured (QPS={qps:g}, BURST={burst}) : {limited:6.2f} s  "
          f"ratio {limited / raw:5.2f}x  (the limiter alone needs >= {(n - burst) / qps:.1f} s)")
    print(f"    reconcile-all, limit raised (QPS/BURST monkeypatched to {RAISED[0]:g}/{RAISED[1]:g}) : {raised:6.2f} s  "
          f"ratio {raised / raw:5.2f}x  (median of per-round ratios {paired['raised']:.2f}x; "
          f"CPU of this process {cpu['raised']:.2f} s, {cpu['raised'] / cpu['raw']:.2f}x raw's)")
    per_record_wall = wall["per-record"]
    print(f"    for comparison, the per-record path (one locked_run per record), limit raised : {per_record_wall:6.2f} s  "
          f"ratio {per_record_wall / raw:5.2f}x  (median of per-round ratios {paired['per-record']:.2f}x; "
          f"CPU {cpu['per-record']:.2f} s)")
    rest = split["total"] - split["kube"] - split["sql"] - split["commit"]
    print(f"    where one more reconcile-all (limit raised) went, {split['total']:.2f} s: cluster calls {split['kube']:.2f} s "
          f"({int(split['calls'])} calls), SQL {split['sql']:.2f} s ({int(split['queries'])} queries, "
          f"{int(split['writes'])} writes), COMMIT {split['commit']:.2f} s, "
          f"the rest (Python: ORM, kubeconfig parsing, manifests) {rest:.2f} s")
    return [
        f"(a) reconcile-all ÷ raw apply <= {GOAL_A}x, limit as configured : {limited / raw:6.2f}x  {verdict(limited / raw <= GOAL_A)}",
        f"(a) reconcile-all ÷ raw apply <= {GOAL_A}x, limit raised        : {raised / raw:6.2f}x  {verdict(raised / raw <= GOAL_A)}",
    ]


def report_b(b: tuple[dict, dict]) -> list[str]:
    first, steady = b
    print("\n(b) sync_cluster of the converged, unchanged set")
    print(f"    first resync after the reconcile: {dict(first['calls'])}, {first['writes']} cluster writes, "
          f"{len(first['db_writes'])} DB writes (storing the nodes)")
    calls = ", ".join(f"{verb} {resource} x{count}" for (verb, resource), count in sorted(steady["calls"].items()))
    print(f"    steady resync: {calls}; {steady['writes']} cluster writes; {len(steady['db_writes'])} DB writes "
          f"({steady['queries']} queries); {len(steady['behind'])} records behind; {steady['seconds'] * 1000:.0f} ms")
    for sql in steady["db_writes"][:5]:
        print(f"      DB write: {sql[:160]}")
    steady_ok = (dict(steady["calls"]) == {("list", "instancetypes"): 1, ("list", "nodes"): 1}
                 and steady["writes"] == 0 and not steady["db_writes"] and not steady["behind"])
    return [f"(b) steady resync: one LIST per kind, 0 cluster writes, 0 DB writes : {verdict(steady_ok)}"]


def report_c(c: dict) -> list[str]:
    lat = c["latencies"]
    ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
    print(f"\n(c) POST → CR stored, {len(lat)} creates at {c['rate']:.1f}/s through the REST API (gunicorn, "
          f"{WEB_WORKERS} workers × 4 threads), Celery worker (prefork, concurrency {WORKER_CONCURRENCY}) on Redis")
    print(f"    p50 {ms(percentile(lat, 50))}   p90 {ms(percentile(lat, 90))}   p99 {ms(percentile(lat, 99))}   max {ms(max(lat))}")
    print(f"    POSTs from {POSTERS} client threads, sent at most {ms(c['lag'])} behind the 1/{RATE:g} s schedule")
    print(f"    medians: POST sent → its apply reached the cluster {ms(statistics.median(c['reached']))}; "
          f"apply received → stored {statistics.median(c['served']) * 1000:.1f} ms; POST answered "
          f"{ms(statistics.median(c['post']))} (p99 {ms(percentile(c['post'], 99))}; "
          f"the response is rendered after the commit that queues the task)")
    print(f"    apply requests by status: {dict(c['statuses'])}; slowest: " + ", ".join(
        f"{name} {ms(total)} (answered {ms(answered)}, apply reached {ms(reached)})"
        for name, total, answered, reached in c["slowest"]))
    print(f"    first quarter median {ms(statistics.median(c['first']))}, last quarter median {ms(statistics.median(c['last']))}")
    keeps_up = statistics.median(c["last"]) <= 2 * statistics.median(c["first"]) + 0.05 and c["rate"] >= RATE * 0.95
    return [f"(c) p50 {ms(percentile(lat, 50))}, p99 {ms(percentile(lat, 99))} at {c['rate']:.1f}/s (no numeric goal "
            f"given; keeps up — sent at >= 95 % of {RATE:g}/s, last-quarter median <= 2x first + 50 ms: {verdict(keeps_up)})"]
