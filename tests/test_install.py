"""Install-time keys: development generates its own on first start into var/, production takes them from the environment."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken

from controlplane import install_keys

ROOT = Path(__file__).resolve().parent.parent
PRINT_KEYS = "from django.conf import settings; print(settings.SECRET_KEY); print(' '.join(settings.FIELD_ENCRYPTION_KEYS))"


def settings_env(var_dir: Path, **extra) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ("SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "DOCKYARD_MODE")}
    return {**env, "DJANGO_SETTINGS_MODULE": "controlplane.settings", "DOCKYARD_VAR_DIR": str(var_dir), **extra}


def keys_of(var_dir: Path, **extra) -> tuple[str, list[str]]:
    """(SECRET_KEY, FIELD_ENCRYPTION_KEYS) as a fresh process (web, worker or beat) loads the settings."""
    result = subprocess.run([sys.executable, "-c", PRINT_KEYS], cwd=ROOT, env=settings_env(var_dir, **extra),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    secret, fields = result.stdout.splitlines()[-2:]
    return secret, fields.split()


def test_the_first_start_generates_private_keys_into_var_and_later_starts_reuse_them(tmp_path):
    secret, fields = keys_of(tmp_path)
    assert len(secret) >= 50 and len(fields) == 1
    Fernet(fields[0].encode())  # a valid Fernet key
    for name in ("secret-key", "field-keys"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "secret-key").read_text().strip() == secret
    assert keys_of(tmp_path) == (secret, fields)


def test_two_installs_never_share_a_key_so_one_dump_does_not_decrypt_with_the_other(tmp_path):
    first, second = keys_of(tmp_path / "a"), keys_of(tmp_path / "b")
    assert first[0] != second[0] and first[1] != second[1]
    dump = Fernet(first[1][0].encode()).encrypt(b'{"token": "cluster-admin"}')
    with pytest.raises(InvalidToken):
        Fernet(second[1][0].encode()).decrypt(dump)


def test_processes_starting_at_once_agree_on_the_keys(tmp_path):
    starts = [subprocess.Popen([sys.executable, "-c", PRINT_KEYS], cwd=ROOT, env=settings_env(tmp_path),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outputs = [process.communicate(timeout=120) for process in starts]
    assert all(process.returncode == 0 for process in starts), [err for _, err in outputs]
    assert len({out.splitlines()[-2] for out, _ in outputs}) == 1
    assert len({out.splitlines()[-1] for out, _ in outputs}) == 1


def test_racing_writers_all_read_the_one_key_that_won(tmp_path):
    path, barrier, seen = tmp_path / "key", threading.Barrier(16), []

    def start():
        barrier.wait()
        seen.append(install_keys.load_or_create(path, install_keys.new_secret_key))

    threads = [threading.Thread(target=start) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 16 and len(set(seen)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key"]  # no temporary file left behind


def test_the_environment_wins_over_the_generated_files(tmp_path):
    keys_of(tmp_path)
    field_key = install_keys.new_field_key()
    assert keys_of(tmp_path, SECRET_KEY="from-the-environment", FIELD_ENCRYPTION_KEYS=field_key) == (
        "from-the-environment", [field_key])


def test_production_takes_no_key_from_var(tmp_path):
    keys_of(tmp_path)  # a development start left keys in this var folder
    result = subprocess.run([sys.executable, "-c", PRINT_KEYS], cwd=ROOT,
                            env=settings_env(tmp_path, DOCKYARD_MODE="production"), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode != 0 and "SECRET_KEY must be set in production mode" in result.stderr
    result = subprocess.run([sys.executable, "-c", PRINT_KEYS], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env=settings_env(tmp_path, DOCKYARD_MODE="production", SECRET_KEY="x" * 50))
    assert result.returncode != 0 and "FIELD_ENCRYPTION_KEYS must be set in production mode" in result.stderr


def test_an_empty_key_file_is_an_error_not_a_new_key(tmp_path):
    (tmp_path / "field-keys").write_text("")
    with pytest.raises(RuntimeError, match="is empty"):
        install_keys.load_or_create(tmp_path / "field-keys", install_keys.new_field_key)
