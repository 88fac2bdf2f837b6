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
        """The error as printed: a headline and one indented line per detail the headline does not already say."""
        # The API's message repeats its first detail ("target: message"), and a check with a target repeats its
        # message as a detail: printed again, every such error read twice (-o json keeps every detail).
        said = (self.message,)
        details = [detail for detail in self.details if detail_text(detail) not in said and detail.get("message") not in said]
        return [f"Error ({self.code}): {self.message}", *(f"  {detail_text(detail)}" for detail in details)]

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "details": self.details}

    def show(self, file=None) -> None:
        for line in self.lines():
            click.echo(line, err=True)


def detail_text(detail: dict) -> str:
    """One detail as a person reads it: `target: message`, or the message alone for the body as a whole."""
    target = detail.get("target") or ""
    message = detail.get("message") or ""
    return f"{target}: {message}" if target else message


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
