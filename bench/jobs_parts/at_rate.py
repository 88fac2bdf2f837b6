"""(c) submit → Job exists at a steady rate, the worker consuming."""
import statistics

from bench.jobs_parts import GOAL_C
from bench.jobs_parts.cluster import Watch, attach, new_fake, retire
from bench.jobs_parts.queued import cpu_text, drain
from bench.jobs_parts.worker import Worker
from bench.support.cpu import CpuMeter
from bench.support.report import ms
from bench.support.report import nearest_rank as percentile
from bench.support.seeding import WORKSPACE
from jobs.manifests import kube_job_name


def part_c(ctx, worker: Worker, label: str) -> dict:
    args = ctx.args
    fake = new_fake(args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-c{label[0]}")
    watch = Watch(fake)
    try:
        names = [f"c{label[0]}-{number:05d}" for number in range(int(args.rate * args.seconds))]
        offset = worker.log.stat().st_size
        with CpuMeter(worker.process.pid, fake.process.pid) as cpu:
            posted = ctx.submitter.run(names, compute.name, rate=args.rate)
            kube_names = {name: kube_job_name(WORKSPACE, name) for name in names}
            watch.wait_all(kube_names.values(), args.wait)
            cpu.stop()
        window = max(watch.added.values()) - posted["start"]
        tasks = {task: worker.runtimes(offset, task) for task in ("reconcile_job", "observe_jobs")}
        latencies = [watch.added[kube_names[name]] - posted["sent"][name] for name in names]
        answered = [posted["answered"][name] - posted["sent"][name] for name in names]
        sent = posted["sent"]
        retire(compute)
        drain()
    finally:
        watch.close()
        fake.stop()
    return {"latencies": latencies, "answered": answered, "lag": posted["lag"], "label": label, "cpu": cpu.spent,
            "tasks": tasks, "window": window, "concurrency": args.concurrency,
            "rate": (len(names) - 1) / (max(sent.values()) - min(sent.values()))}


def report_c(c: dict, rate: float) -> list[str]:
    lat = c["latencies"]
    quarter = len(lat) // 4
    p99 = percentile(lat, 99)
    print(f"\n(c) submit → Job exists, {len(lat)} jobs at {c['rate']:.1f}/s (asked {rate:g}/s), limit {c['label']}")
    print(f"    p50 {ms(percentile(lat, 50))}   p90 {ms(percentile(lat, 90))}   p99 {ms(p99)}   max {ms(max(lat))}")
    print(f"    POST answered: median {ms(statistics.median(c['answered']))}, p99 {ms(percentile(c['answered'], 99))}; "
          f"POSTs sent at most {ms(c['lag'])} behind schedule")
    print(f"    median of the first quarter {ms(statistics.median(lat[:quarter]))}, of the last quarter "
          f"{ms(statistics.median(lat[-quarter:]))}")
    print(f"    CPU per job (bench = the API requests and the watch): {cpu_text(c['cpu'], len(lat))}")
    pool = c["concurrency"] * c["window"]
    for task, runtimes in c["tasks"].items():
        if runtimes:
            print(f"    {task}: {len(runtimes)} runs, median {ms(statistics.median(runtimes))}, max {ms(max(runtimes))}, "
                  f"{sum(runtimes):.1f} s in all = {sum(runtimes) / pool:.0%} of the pool's time in the window")
    verdict = "PASS" if p99 <= GOAL_C else "MISS"
    return [f"(c) limit {c['label']:8s}: p50 {ms(percentile(lat, 50))}, p99 {ms(p99)} at {c['rate']:.1f}/s "
            f"(goal p99 <= {GOAL_C:g} s): {verdict}"]
