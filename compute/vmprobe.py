"""What Dockyard learns about an attached host: one shell command that prints it, and the parser of its output (pure).

The command is POSIX sh and reads only what any Linux host has (uname, /proc, /etc/os-release, df); docker and
nvidia-smi are asked only when present. Its output is `key=value` lines, then nvidia-smi's CSV rows after a marker
line. The parser trusts nothing of it: a value that does not read is None, text is cut short, odd bytes are replaced.
"""
import shlex

GPU_QUERY = "nvidia-smi --query-gpu=index,name,memory.total,uuid,driver_version --format=csv,noheader,nounits"
GPU_MARKER = "--- gpus"
MAX_TEXT = 200  # characters kept of any text the host prints
MAX_GPUS = 64
MAX_NUMBER = 2**53  # past this a figure is not a machine's (and JSON readers lose precision)


def probe_script(jobs_dir: str) -> str:
    """The probe command; the disk figures are of the filesystem `jobs_dir` (relative to the home) is on, or will be."""
    return "\n".join([
        'cd "$HOME" 2>/dev/null',
        'echo "os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"',
        'echo "kernel=$(uname -r 2>/dev/null)"',
        'echo "arch=$(uname -m 2>/dev/null)"',
        'echo "cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)"',
        "echo \"memory_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null)\"",
        # the jobs folder may not exist yet: its nearest existing parent is on the same filesystem
        f"d={shlex.quote(jobs_dir)}",
        'while [ ! -d "$d" ] && [ "$d" != "." ] && [ "$d" != "/" ]; do d=$(dirname "$d"); done',
        "df -Pk \"$d\" 2>/dev/null | awk 'NR == 2 {print \"disk_total_kb=\" $2; print \"disk_free_kb=\" $4}'",
        'if command -v docker >/dev/null 2>&1; then echo "docker=$(docker --version 2>/dev/null)"; fi',
        'echo "pid1=$(cat /proc/1/comm 2>/dev/null)"',
        f'echo "{GPU_MARKER}"',
        f"if command -v nvidia-smi >/dev/null 2>&1; then {GPU_QUERY} 2>/dev/null; fi",
        "exit 0",
    ])


def _text(value: str | None) -> str | None:
    value = (value or "").strip()
    return value[:MAX_TEXT] or None


def _number(value: str | None) -> int | None:
    """A whole number from 0 to MAX_NUMBER, or None (a decimal's integer part: some tools print "16384.0")."""
    whole, _, fraction = (value or "").strip().partition(".")
    if not whole.isascii() or not whole.isdigit() or (fraction and not fraction.isdigit()) or len(whole) > 16:
        return None
    number = int(whole)
    return number if number <= MAX_NUMBER else None


def _mb(kilobytes: str | None) -> int | None:
    number = _number(kilobytes)
    return None if number is None else number // 1024


def _docker(line: str | None) -> str | None:
    """The version of `docker --version`'s "Docker version 27.3.1, build ce12230" (the line itself if it differs)."""
    text = _text(line)
    if text is None:
        return None
    words = text.replace(",", " ").split()
    if len(words) >= 3 and words[:2] == ["Docker", "version"]:
        return words[2]
    return text


def parse_gpu(row: str) -> dict | None:
    """One row of the GPU query: index, name, memory (MiB), uuid, driver; None when the row does not read."""
    cells = [cell.strip() for cell in row.split(",")]
    if len(cells) < 5:
        return None
    index = _number(cells[0])
    if index is None:
        return None
    name = ", ".join(cells[1:-3])  # a name with a comma in it keeps it: the last three cells are fixed
    return {"index": index, "name": _text(name) or "", "memory_mb": _number(cells[-3]), "uuid": _text(cells[-2]),
            "driver_version": _text(cells[-1])}


def parse_probe(text: str) -> dict:
    """The probe command's output as the status fields (os, kernel, arch, cpus, memory_mb, disk_total_mb,
    disk_free_mb, docker, systemd, gpus); what the host did not say is None (gpus: [])."""
    values: dict[str, str] = {}
    gpu_rows: list[str] = []
    in_gpus = False
    for line in text.replace("\x00", "").splitlines():
        if line.strip() == GPU_MARKER:
            in_gpus = True
        elif in_gpus:
            gpu_rows.append(line)
        elif "=" in line:
            key, _, value = line.partition("=")
            values.setdefault(key.strip(), value)
    gpus = [gpu for gpu in map(parse_gpu, gpu_rows) if gpu is not None][:MAX_GPUS]
    return {
        "os": _text(values.get("os")), "kernel": _text(values.get("kernel")), "arch": _text(values.get("arch")),
        "cpus": _number(values.get("cpus")), "memory_mb": _mb(values.get("memory_kb")),
        "disk_total_mb": _mb(values.get("disk_total_kb")), "disk_free_mb": _mb(values.get("disk_free_kb")),
        "docker": _docker(values.get("docker")), "systemd": (values.get("pid1") or "").strip() == "systemd",
        "gpus": sorted(gpus, key=lambda gpu: gpu["index"]),
    }
