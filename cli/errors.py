"""Errors the CLI reports, each with the exit code the docs promise."""
import click

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECTION = 3
EXIT_NOT_LOGGED_IN = 4
# How a followed job ended (`job create --stream`, `job logs --follow`); Completed is EXIT_OK.
EXIT_JOB_FAILED = 5
EXIT_JOB_CANCELED = 6
# Ctrl-C while following a job: the shell's convention for SIGINT (128 + 2); the job itself goes on.
EXIT_INTERRUPTED = 130


class CliError(click.ClickException):
    """An error printed as `Error (Code): message` plus one line per detail, then exit with its code."""

    def __init__(self, message: str, *, code: str = "Error", details: list[dict] | None = None, exit_code: int = EXIT_API_ERROR):
        super().__init__(message)
        self.code = code
        self.details = details or []
        self.exit_code = exit_code

    def lines(self) -> list[str]:
        """The error as printed: a headline and one indented line per detail."""
        headline = f"Error ({self.code}): {self.message}"
        return [headline, *(detail_line(detail) for detail in self.details)]

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "details": self.details}

    def show(self, file=None) -> None:
        for line in self.lines():
            click.echo(line, err=True)


def detail_line(detail: dict) -> str:
    target = detail.get("target") or ""
    message = detail.get("message") or ""
    return f"  {target}: {message}" if target else f"  {message}"


class ApiError(CliError):
    """The API answered with an error status; 401 means the token no longer logs us in."""

    def __init__(self, status: int, message: str, *, code: str, details: list[dict] | None = None):
        exit_code = EXIT_NOT_LOGGED_IN if status == 401 else EXIT_API_ERROR
        super().__init__(message, code=code, details=details, exit_code=exit_code)
        self.status = status


class ConnectionFailed(CliError):
    """The server could not be reached or did not answer in time."""

    def __init__(self, message: str, *, code: str = "ConnectionFailed"):
        super().__init__(message, code=code, exit_code=EXIT_CONNECTION)


class NotLoggedIn(CliError):
    """No URL or token is configured."""

    def __init__(self, missing: str):
        super().__init__(
            f"Not logged in ({missing} is not set): run `dockyard login --url URL --token TOKEN` "
            "or set DOCKYARD_URL and DOCKYARD_TOKEN.",
            code="NotLoggedIn",
            exit_code=EXIT_NOT_LOGGED_IN,
        )


class InvalidInput(CliError):
    """A file or option the CLI checks itself before calling the API (same shape as the API's 400s)."""

    def __init__(self, message: str, *, target: str | None = None, code: str = "InvalidInput", exit_code: int = EXIT_API_ERROR):
        details = [{"target": target, "message": message}] if target else []
        super().__init__(message, code=code, details=details, exit_code=exit_code)
