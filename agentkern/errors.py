"""Errors that mean "the user asked for something we cannot do": the CLI prints one line and exits 2."""


class UserError(Exception):
    """Bad input: a missing file, a file that is not a problem, an unknown target, ..."""

    exit_code = 2
