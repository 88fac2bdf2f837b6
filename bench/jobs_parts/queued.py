"""(b) queued → exist: N jobs waiting in Redis, the worker resumed, until the N-th Job is seen; ÷ a raw apply."""
import gc
import statistics
import time

from bench.jobs_parts import GOAL_B, SHIPPED
from bench.jobs_parts.cluster import Watch, attach, new_fake, retire
from bench.jobs_parts.worker import QUEUE, Worker
from bench.support.broker import queue_length
from bench.support.cpu import CpuMeter
from bench.support.processes import wait_for
from bench.support.report import load, ms
from bench.support.report import nearest_rank as percentile
from bench.support.seeding import WORKSPACE, set_kube_limit
from compute.connections import connection_for
from controlplane.kube import client as kube
from jobs import tasks as job_tasks
from jobs.manifests import kube_job_name
from jobs.models import Job


def queued() -> int:
    return queue_length(QUEUE)


def drain(timeout: float = 60) -> None:
    """Wait for the queue to empty and the observation loop to stop asking (its ticks are ETA tasks in the worker)."""
    wait_for(lambda: queued() == 0, timeout, "the queue to drain", 0.1)
    time.sleep(job_tasks.OBSERVE_EVERY + 0.5)
    wait_for(lambda: queued() == 0, timeout, "the queue to drain", 0.1)


def dockyard_run(ctx, worker: Worker, n: int, tag: str) -> dict:
    """Submit n jobs with the worker paused; time from resuming it until the n-th Job is seen."""
    fake = new_fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-{tag}")
    watch = Watch(fake)
    try:
        worker.pause()
        names = [f"{tag}-{number:05d}" for number in range(n)]
        posted = ctx.submitter.run(names, compute.name)
        post_seconds = max(posted["answered"].values()) - posted["start"]
        assert queued() >= n, queued()
        offset = worker.log.stat().st_size
        with CpuMeter(worker.process.pid, fake.process.pid) as cpu:
            started = time.monotonic()
            worker.resume()
            last = watch.wait_all([kube_job_name(WORKSPACE, name) for name in names], ctx.args.wait)
            cpu.stop()
        elapsed = last - started
        runtimes = worker.runtimes(offset)
        wait_for(lambda: Job.objects.filter(compute=compute, runner__submitted=True).count() == n, 60, "the statuses")
        manifests = [job.manifests for job in Job.objects.filter(compute=compute).order_by("name")]
        retire(compute)
        drain()
    finally:
        watch.close()
        fake.stop()
    assert not watch.error, watch.error
    return {"seconds": elapsed, "post_seconds": post_seconds, "manifests": manifests, "cpu": cpu.spent,
            "runtimes": runtimes}


def raw_run(ctx, manifests: list[list[dict]], limit: tuple[float, int], tag: str) -> float:
    """Create the same manifests with controlplane.kube.client.apply over connection_for() of a compute on a fresh fake."""
    fake = new_fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-{tag}")
    conn = connection_for(compute)
    watch = Watch(fake)
    names = [objects[-1]["metadata"]["name"] for objects in manifests]
    set_kube_limit(*limit)
    gc.collect()
    try:
        with CpuMeter(None, fake.process.pid) as cpu:
            started = time.monotonic()
            for objects in manifests:
                for manifest in objects:
                    kube.apply(conn, manifest)
            last = watch.wait_all(names, ctx.args.wait)
            cpu.stop()
    finally:
        set_kube_limit(*SHIPPED)
        watch.close()
        fake.stop()
    return {"seconds": last - started, "cpu": cpu.spent}


def cpu_text(cpu: dict[str, float], n: int) -> str:
    return ", ".join(f"{party} {seconds / n * 1000:.1f}" for party, seconds in cpu.items() if seconds) + " ms"


def part_b(ctx, worker: Worker, limit: tuple[float, int], rounds: int, label: str) -> dict:
    warm = dockyard_run(ctx, worker, ctx.args.warmup_jobs, f"w{label[0]}")  # both pool processes' first tasks
    raw_run(ctx, warm["manifests"], limit, f"w{label[0]}-raw")
    samples = []
    n = ctx.args.jobs
    for number in range(rounds):
        tag = f"{label[0]}{number}"
        dock = dockyard_run(ctx, worker, n, tag)
        raw = raw_run(ctx, dock["manifests"], limit, f"{tag}-raw")
        samples.append({"dock": dock["seconds"], "raw": raw["seconds"], "post": dock["post_seconds"],
                        "dock_cpu": dock["cpu"], "raw_cpu": raw["cpu"], "runtimes": dock["runtimes"]})
        print(f"    (b) {label} round {number + 1}: Dockyard {dock['seconds']:.2f} s, raw {raw['seconds']:.2f} s → "
              f"{dock['seconds'] / raw['seconds']:.2f}x  (submitting the {n} through the API took "
              f"{dock['post_seconds']:.2f} s; load {load()})", flush=True)
        print(f"        CPU per job, Dockyard: {cpu_text(dock['cpu'], n)}; raw: {cpu_text(raw['cpu'], n)}", flush=True)
        if dock["runtimes"]:
            busy = sum(dock["runtimes"]) / (ctx.args.concurrency * dock["seconds"])
            print(f"        reconcile_job as Celery timed it: median {ms(statistics.median(dock['runtimes']))}, "
                  f"{len(dock['runtimes'])} logged in the window; the pool was inside tasks {busy:.0%} of the time",
                  flush=True)
    return {"samples": samples, "limit": limit, "label": label}


def report_b(b: dict, n: int, concurrency: int) -> list[str]:
    samples = b["samples"]
    dock = statistics.median(s["dock"] for s in samples)
    raw = statistics.median(s["raw"] for s in samples)
    paired = statistics.median(s["dock"] / s["raw"] for s in samples)
    posting = statistics.median(s["post"] for s in samples)
    parties = ("worker main", "worker pool", "fake", "bench", "postgres")
    dock_cpu = {party: statistics.median(s["dock_cpu"][party] for s in samples) for party in parties}
    raw_cpu = {party: statistics.median(s["raw_cpu"][party] for s in samples) for party in parties}
    qps, burst = b["limit"]
    print(f"\n(b) {n} queued jobs → {n} Jobs in the cluster, limit {b['label']} (QPS {qps:g}, burst {burst}), "
          f"{len(samples)} rounds, medians")
    print(f"    Dockyard (worker, concurrency {concurrency}): {dock:6.2f} s  ({dock / n * 1000:.2f} ms per job)")
    print(f"    raw kube.apply, one process             : {raw:6.2f} s  ({raw / n * 1000:.2f} ms per Job)")
    rounds = ", ".join(f"{s['dock'] / s['raw']:.2f}" for s in samples)
    print(f"    ratio {dock / raw:.2f}x (median of per-round ratios {paired:.2f}x; goal <= {GOAL_B}x)  [per round: {rounds}]")
    print(f"    CPU per job (median), Dockyard: {cpu_text(dock_cpu, n)} = {sum(dock_cpu.values()) / n * 1000:.1f} ms; "
          f"raw: {cpu_text(raw_cpu, n)} = {sum(raw_cpu.values()) / n * 1000:.1f} ms; "
          f"ratio of total CPU {sum(dock_cpu.values()) / sum(raw_cpu.values()):.2f}x")
    runtimes = [value for sample in samples for value in sample["runtimes"]]
    if runtimes:
        print(f"    reconcile_job as Celery timed it (worker log, INFO): median {ms(statistics.median(runtimes))}, "
              f"p90 {ms(percentile(runtimes, 90))}; {concurrency} pool processes → at best "
              f"{statistics.median(runtimes) / concurrency * 1000:.1f} ms per job")
    if qps < 1000:
        print(f"    the limiter alone: raw >= {max(n - burst, 0) / qps:.1f} s (one bucket); Dockyard >= "
              f"{max(n - concurrency * burst, 0) / (concurrency * qps):.1f} s ({concurrency} pool processes, a bucket each)")
    print(f"    (submitting the {n} through the API beforehand took {posting:.2f} s, {n / posting:.0f}/s from "
          f"the client threads; not in the ratio)")
    verdict = "PASS" if dock / raw <= GOAL_B else "MISS"
    return [f"(b) limit {b['label']:8s} (QPS {qps:g}/burst {burst}): Dockyard {dock:.2f} s / raw {raw:.2f} s = "
            f"{dock / raw:.2f}x (per-round {paired:.2f}x) goal <= {GOAL_B}x: {verdict}"]
