"""Helpers for the API specification tests of every app."""


def assert_error(response, status: int, code: str, target: str | None = None) -> dict:
    """The response is the contract's error shape with this status and code (and a detail at `target`)."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"], error
    assert isinstance(error["details"], list), error
    for detail in error["details"]:
        assert set(detail) == {"target", "message"} and detail["message"], error
    if target is not None:
        assert target in [detail["target"] for detail in error["details"]], error
    return error


def stop_leftover_runs(pid_files) -> None:
    """Stop what a test that failed half-way left running: the process group of every run folder's pid file."""
    from compute.runners import local as runner

    for pid_file in pid_files:
        process = runner.adopt(pid_file.parent)
        if process and runner.group_alive(process.pid):
            runner.kill_group(process, grace=0.2)
