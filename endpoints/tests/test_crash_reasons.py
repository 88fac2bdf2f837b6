"""Why a local server stopped, read from its log: the scoring script's exception, not gunicorn's last lines (table)."""
import pytest

from endpoints.reconcile.local import script_error

SITE = "/opt/venv/lib/python3.11/site-packages/azureml_inference_server_http/server"
GUNICORN_END = """\
2026-12-02 04:44:44,469 I [21007] gunicorn.error - Worker exiting (pid: 21007)
[2026-12-02 04:44:47 +0000] [21003] [ERROR] Worker (pid:21007) exited with code 3.
[2026-12-02 04:44:47 +0000] [21003] [ERROR] Shutting down: Master
[2026-12-02 04:44:47 +0000] [21003] [ERROR] Reason: Worker failed to boot.
"""
# The inference server's own shape: the script's traceback, then its wrapper's, then gunicorn giving up.
INIT_FAILED = f"""\
2026-12-02 04:44:44,446 E [21007] azmlinfsrv - User's init function failed
2026-12-02 04:44:44,468 E [21007] azmlinfsrv - Encountered Exception Traceback (most recent call last):
  File "{SITE}/user_script.py", line 119, in invoke_init
    self._user_init()
  File "/srv/code/score.py", line 7, in init
    model = joblib.load(path)
  File "/srv/code/loader.py", line 3, in load
    raise FileNotFoundError("model.pkl")
FileNotFoundError: model.pkl

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "{SITE}/aml_blueprint.py", line 109, in setup
    self.user_script.invoke_init()
  File "{SITE}/user_script.py", line 121, in invoke_init
    raise UserScriptException(ex) from ex
azureml_inference_server_http.server.user_script.UserScriptException: Caught an unhandled exception from the user script

{GUNICORN_END}"""
IMPORT_FAILED = f"""\
Traceback (most recent call last):
  File "{SITE}/user_script.py", line 70, in load_script
    main_module_spec.loader.exec_module(user_module)
  File "/srv/code/score.py", line 1, in <module>
    import torch
ModuleNotFoundError: No module named 'torch'
{GUNICORN_END}"""
SERVER_ONLY = f"""\
Traceback (most recent call last):
  File "{SITE}/entry.py", line 3, in <module>
    raise OSError("address in use")
OSError: address in use
{GUNICORN_END}"""


@pytest.mark.parametrize("log, expected", [
    pytest.param(INIT_FAILED, "FileNotFoundError: model.pkl (/srv/code/loader.py, line 3, in load)", id="init-raises"),
    pytest.param(IMPORT_FAILED, "ModuleNotFoundError: No module named 'torch' (/srv/code/score.py, line 1, in <module>)",
                 id="import-fails"),
    pytest.param(SERVER_ONLY, "", id="no-frame-of-the-script"),
    pytest.param(GUNICORN_END, "", id="no-traceback"),
    pytest.param("", "", id="empty-log"),
    pytest.param("Traceback (most recent call last):\n  File \"/srv/code/score.py\", line 2, in run\n", "", id="cut-short"),
])
def test_the_scoring_scripts_exception_and_where_it_was_raised(log, expected):
    assert script_error(log) == expected
    assert "Worker exiting" not in script_error(log) and "Shutting down" not in script_error(log)
