"""Run the fake API server until killed: bin/fake-kube --port 0 --kubeconfig kube.yaml (or python -m tests.fake_kube)."""
from __future__ import annotations

import argparse
import signal
import sys
import threading

from .server import FakeKube


def main(argv: list[str] | None = None) -> int:
    """Parse options, start the server, write the kubeconfig, wait for SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="bin/fake-kube", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    parser.add_argument("--nodes", type=int, default=2, help="CPU nodes (8 cpu, 32Gi)")
    parser.add_argument("--gpu-nodes", type=int, default=0, help="GPU nodes (4 nvidia.com/gpu each)")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of API requests answered with a fault")
    parser.add_argument("--fault-kinds", default="500,503,429", help="comma-separated: 500,503,504,429,timeout,reset,drop")
    parser.add_argument("--seed", type=int, default=0, help="seed for faults and generated names")
    parser.add_argument("--manual-clock", action="store_true", help="freeze simulated time (default: wall clock)")
    parser.add_argument("--job-seconds", type=float, default=10.0, help="how long Job pods run")
    args = parser.parse_args(argv)
    kube = FakeKube(port=args.port, nodes=args.nodes, gpu_nodes=args.gpu_nodes, fault_rate=args.fault_rate,
                    fault_kinds=tuple(args.fault_kinds.split(",")), seed=args.seed, auto=not args.manual_clock,
                    job_pod_seconds=args.job_seconds).start()
    kube.write_kubeconfig(args.kubeconfig)
    print(f"fake kube-apiserver listening on {kube.url}; kubeconfig written to {args.kubeconfig}", flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    kube.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
