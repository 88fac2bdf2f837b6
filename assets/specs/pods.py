"""How a pod gets an uploaded folder (pure): an init container fetching a signed URL's .tar.gz into an emptyDir.

Jobs and deployments both use it. The cluster needs nothing of Dockyard but that URL: no database, broker or token
reaching a workspace. The image is a small public one with wget and tar (DOCKYARD_FETCH_IMAGE, busybox by default).
"""
import shlex

URL_VARIABLE = "CODE_URL"
ARCHIVE = "/tmp/code.tar.gz"


def fetch_script(folder: str) -> str:
    """Fetch, unpack, make the files the main container's (whatever its uid), and say what arrived in the pod's log."""
    target = shlex.quote(folder)
    return (f'set -e; wget -q -O {ARCHIVE} "${URL_VARIABLE}"; tar -xzf {ARCHIVE} -C {target}; rm {ARCHIVE}; '
            f"chmod -R a+rwX {target}; "
            f'echo "fetched $(find {target} -type f | wc -l) files into {folder}"')


def fetch_init_container(*, name: str, volume: str, folder: str, url: str | None, image: str,
                         url_from_secret: dict | None = None) -> dict:
    """The init container; the URL is given inline (`url`) or read from a Secret's key (`url_from_secret`)."""
    variable = ({"name": URL_VARIABLE, "valueFrom": {"secretKeyRef": url_from_secret}} if url_from_secret
                else {"name": URL_VARIABLE, "value": url})
    return {
        "name": name, "image": image, "command": ["/bin/sh", "-c", fetch_script(folder)], "env": [variable],
        "volumeMounts": [{"name": volume, "mountPath": folder}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
    }
