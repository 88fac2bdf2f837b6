"""How a pod gets stored folders and gives back its outputs (pure): busybox steps (sh, wget, tar) fed by signed URLs.

Jobs and deployments both use it. The cluster needs nothing of Dockyard but those URLs: no database, broker or token
reaching a workspace. The image is a small public one with wget and tar (DOCKYARD_FETCH_IMAGE, busybox by default).

A URL is given inline, through an env var read from a Secret (fixed when the container starts), or as a file of a
Secret mounted as a volume (`url_file`): the kubelet refreshes a mounted Secret, so a URL read from the file at the
moment of the fetch or upload is the one Dockyard last renewed, however long the pod waited to start.
"""
import shlex

URL_VARIABLE = "CODE_URL"
ARCHIVE = "/tmp/code.tar.gz"
URLS_VOLUME = "urls"
URLS_DIR = "/var/dockyard/urls"  # where a job's URL Secret is mounted (read-only) in its fetch and upload steps
EXPIRES_ANNOTATION = "dockyard.dev/url-expires"
SMALL = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
UPLOAD_ARCHIVE = "/tmp/outputs.tar.gz"
UPLOAD_LIST = "/tmp/outputs.list"
UPLOAD_ATTEMPTS = 3


def _url(url_file: str | None) -> str:
    """The shell word that gives the URL: read from the mounted Secret's file at this moment, or the env var."""
    return f'"$(cat {shlex.quote(url_file)})"' if url_file else f'"${URL_VARIABLE}"'


def fetch_script(folder: str, url_file: str | None = None, archive: str = ARCHIVE) -> str:
    """Fetch, unpack, make the files the main container's (whatever its uid), and say what arrived in the pod's log."""
    target = shlex.quote(folder)
    return (f"set -e; mkdir -p {target}; wget -q -O {archive} {_url(url_file)}; tar -xzf {archive} -C {target}; "
            f"rm {archive}; chmod -R a+rwX {target}; "
            f'echo "fetched $(find {target} -type f | wc -l) files into {folder}"')


def file_fetch_script(folder: str, file: str, shown: str) -> str:
    """Fetch one file from the URL in $INPUT_URL (a tenant's https:// URL) into folder/file; the log names `shown`."""
    target = shlex.quote(f"{folder}/{file}")
    return (f"set -e; mkdir -p {shlex.quote(folder)}; wget -q -O {target} \"$INPUT_URL\"; chmod a+r {target}; "
            f'echo "fetched {_quoted_text(shown)} ($(wc -c < {target}) bytes) into {_quoted_text(folder + "/" + file)}"')


def _quoted_text(text: str) -> str:
    """Text inside a double-quoted echo argument: what the shell would expand is escaped."""
    return "".join(f"\\{ch}" if ch in '"$`\\' else ch for ch in text)


def fetch_init_container(*, name: str, volume: str, folder: str, url: str | None, image: str,
                         url_from_secret: dict | None = None, url_file: str | None = None) -> dict:
    """The init container; the URL is given inline (`url`), read from a Secret's key (`url_from_secret`) into the
    environment, or read from the mounted URL Secret's file (`url_file`) at the moment it fetches."""
    if url_file:
        return snapshot_fetch_container(name=name, image=image, volume=volume, mount_path=folder, folder=folder,
                                        url_file=url_file)
    variable = ({"name": URL_VARIABLE, "valueFrom": {"secretKeyRef": url_from_secret}} if url_from_secret
                else {"name": URL_VARIABLE, "value": url})
    return {
        "name": name, "image": image, "command": ["/bin/sh", "-c", fetch_script(folder)], "env": [variable],
        "volumeMounts": [{"name": volume, "mountPath": folder}], "resources": SMALL,
    }


def snapshot_fetch_container(*, name: str, image: str, volume: str, mount_path: str, folder: str,
                             url_file: str) -> dict:
    """An init container fetching a snapshot's .tar.gz, from the URL in the mounted Secret's `url_file`, into `folder`
    (at or under the volume's `mount_path`)."""
    return {
        "name": name, "image": image, "command": ["/bin/sh", "-c", fetch_script(folder, url_file)],
        "volumeMounts": [{"name": volume, "mountPath": mount_path}, urls_mount()], "resources": SMALL,
    }


def file_fetch_container(*, name: str, image: str, volume: str, mount_path: str, folder: str, file: str,
                         url: str) -> dict:
    """An init container fetching one file from a tenant's https:// URL into folder/file (the URL needs no renewal:
    it is the tenant's own, given inline; the log shows it without its query, which may carry a credential)."""
    return {
        "name": name, "image": image, "command": ["/bin/sh", "-c", file_fetch_script(folder, file, url.split("?", 1)[0])],
        "env": [{"name": "INPUT_URL", "value": url}], "volumeMounts": [{"name": volume, "mountPath": mount_path}],
        "resources": SMALL,
    }


def urls_mount() -> dict:
    return {"name": URLS_VOLUME, "mountPath": URLS_DIR, "readOnly": True}


def urls_volume(secret: str) -> dict:
    """The URL Secret as a volume: a pod waits (FailedMount) until it exists, then sees each renewal."""
    return {"name": URLS_VOLUME, "secret": {"secretName": secret}}


def url_secret_manifest(*, name: str, namespace: str, labels: dict, urls: dict[str, str], expires: int,
                        owner: dict | None = None) -> dict:
    """The Secret holding signed URLs by key, with when the earliest stops working; `owner` an ownerReference."""
    metadata = {"name": name, "namespace": namespace, "labels": labels, "annotations": {EXPIRES_ANNOTATION: str(expires)}}
    if owner:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": metadata, "stringData": urls}


def upload_script(folder: str, url_file: str) -> str:
    """The outputs sidecar: wait; on SIGTERM (the kubelet's, once the main container ended, however it ended) pack the
    regular files under `folder` (links and special files are left out and counted) and POST them to the URL read
    from `url_file` + "<rank>/" at that moment, trying a few times; its log says what was sent."""
    target = shlex.quote(folder)
    post = (f"wget -q -O - --header 'Content-Type: application/gzip' --post-file {UPLOAD_ARCHIVE} "
            f'"$(cat {shlex.quote(url_file)})$RANK/"')
    return "\n".join([
        "upload() {",
        '  kill "$sleeper" 2>/dev/null',
        f"  cd {target} || exit 0",
        f"  find . -type f > {UPLOAD_LIST}",
        "  skipped=$(find . ! -type f ! -type d | wc -l)",
        f"  if [ -s {UPLOAD_LIST} ]; then tar -czf {UPLOAD_ARCHIVE} -T {UPLOAD_LIST} || exit 1",
        f"  else head -c 10240 /dev/zero | gzip -c > {UPLOAD_ARCHIVE}; fi  # an empty tar (busybox tar makes none)",
        f"  for attempt in {' '.join(str(n) for n in range(1, UPLOAD_ATTEMPTS + 1))}; do",
        f"    if {post}; then",
        f'      echo; echo "uploaded $(wc -l < {UPLOAD_LIST}) files ($(wc -c < {UPLOAD_ARCHIVE}) bytes packed) of '
        f'{_quoted_text(folder)} as rank $RANK; left out $skipped links or special files"',
        "      exit 0",
        "    fi",
        '    echo "upload attempt $attempt failed"; sleep 2',
        "  done",
        "  exit 1",
        "}",
        "trap upload TERM",
        f'echo "waiting for the main container to end, then uploading {_quoted_text(folder)}"',
        'while true; do sleep 3600 >/dev/null 2>&1 & sleeper=$!; wait "$sleeper"; done',
    ])


def upload_sidecar(*, name: str, image: str, volume: str, workdir: str, folder: str, rank_env: dict,
                   memory_limit: str) -> dict:
    """A native sidecar (an init container with restartPolicy Always, Kubernetes >= 1.29): started before the main
    container, sent SIGTERM after it exits, it then uploads `folder`. busybox wget holds the archive in memory while it
    posts it, so its memory limit covers the largest body Dockyard accepts."""
    return {
        "name": name, "image": image, "restartPolicy": "Always",
        "command": ["/bin/sh", "-c", upload_script(folder, f"{URLS_DIR}/outputs")], "env": [rank_env],
        "volumeMounts": [{"name": volume, "mountPath": workdir, "readOnly": True}, urls_mount()],
        "resources": {"requests": SMALL["requests"], "limits": {"cpu": "500m", "memory": memory_limit}},
    }
