"""Realise a conda file into the workspace's environment cache, once, before a local run starts (stdlib only).

Run as a script by the wrapper of a local run, outside the sandbox, before the run's own sandbox starts:

    realiser.py PLAN.json

PLAN names the cache entry (`final`), its scratch folder (`partial`), the lock, the sandboxed realisation's command
and environment (built by environments.py: the shell step of assets/specs/realise.py in a sandbox with the network,
the scratch folder shown at the path the environment is used at), the sandbox's uid and where to write the result.

Under an exclusive lock on the entry: a ready entry is reused; otherwise the scratch folder is cleared, the
realisation runs there, and only a complete environment (its ready mark holds the hash) is renamed into place. A crash
at any point leaves at most a scratch folder, which the next holder of the lock clears: a half environment is never
used. Two runs of the same file realise it once; the second waits and reuses. Output goes to the run's log; the
result (seconds, reused, or pip's last lines) to RESULT for the worker's event. Exits 0, or FAILED when realising
failed.
"""
import collections
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

FAILED = 97  # as assets/specs/realise.py (this script imports nothing of Dockyard; a test checks)
TAIL = 20  # lines of the realisation's output kept as the reason of a failure
READY = ".dockyard-ready"


def main(plan_path: str) -> int:
    with open(plan_path) as handle:
        plan = json.load(handle)
    os.makedirs(os.path.dirname(plan["lock"]), exist_ok=True)
    with open(plan["lock"], "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("Waiting for another run realising the same conda file in this workspace.")
            fcntl.flock(lock, fcntl.LOCK_EX)
        return realise(plan)


def realise(plan: dict) -> int:
    final, partial = plan["final"], plan["partial"]
    if is_ready(final, plan["hash"]):
        say(f"Environment reused: conda file sha256 {plan['hash']} was realised before in this workspace.")
        write_result(plan, {"reused": True})
        return 0
    for stale in (final, partial):  # a final folder without its mark, or a crashed run's scratch: never used
        shutil.rmtree(stale, ignore_errors=True)
    os.makedirs(partial)
    give(partial, plan["uid"])
    started = time.monotonic()
    code, tail = run(plan["command"], plan["env"])
    seconds = round(time.monotonic() - started, 1)
    if code != 0 or not is_ready(partial, plan["hash"]):
        shutil.rmtree(partial, ignore_errors=True)
        write_result(plan, {"failed": True, "seconds": seconds, "tail": tail})
        return FAILED
    os.rename(partial, final)  # the one step that makes it usable: all of it, or none
    say(f"Environment cached for this workspace ({seconds} s in all).")
    write_result(plan, {"realised": True, "seconds": seconds})
    return 0


def is_ready(folder: str, digest: str) -> bool:
    try:
        with open(os.path.join(folder, "env", READY)) as mark:
            return mark.read().strip() == digest
    except OSError:
        return False


def run(command: str, env: dict) -> tuple[int, list[str]]:
    """Run the sandboxed realisation, its output passed on line by line; its exit code and last lines."""
    tail: collections.deque = collections.deque(maxlen=TAIL)
    process = subprocess.Popen(["/bin/sh", "-c", command], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for raw in process.stdout:
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        tail.append(line[:1000])
        say(line)
    return process.wait(), list(tail)


def give(folder: str, uid: int) -> None:
    """The scratch folder belongs to the sandbox uid, which writes the environment in it."""
    if os.geteuid() == 0:
        os.chown(folder, uid, uid)


def write_result(plan: dict, result: dict) -> None:
    temporary = plan["result"] + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(result, handle)
    os.replace(temporary, plan["result"])


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
