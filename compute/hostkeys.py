"""SSH host keys as Dockyard records and shows them: OpenSSH's SHA256 fingerprints (pure)."""
import base64
import binascii
import hashlib
import re

# "SHA256:" and the unpadded base64 of a SHA-256 digest (43 characters), as `ssh-keygen -lf` prints it.
FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
FINGERPRINT_MESSAGE = "Must be an OpenSSH SHA256 fingerprint: 'SHA256:' and 43 base64 characters (ssh-keygen -lf)."


def fingerprint(key_line: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line ("ssh-ed25519 AAAA… [comment]")."""
    parts = key_line.split()
    try:
        blob = base64.b64decode(parts[1]) if len(parts) > 1 else b""
    except (binascii.Error, ValueError):
        blob = b""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
