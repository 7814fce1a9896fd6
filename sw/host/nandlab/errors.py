"""User-facing errors: raised for bad input or a missing tool, printed as one line without a traceback."""


class NandLabError(Exception):
    """A problem the user can fix; the CLI prints `nandlab: error: <message>` and exits non-zero."""
    exit_code = 2


class MissingToolError(NandLabError):
    """A required tool or device is absent; the message says what to install or attach."""
    exit_code = 3
