"""Errors a user can act on.

Every layer raises :class:`UserError` (or a subclass) for bad input: the command
line prints its one-line message and exits with status 2, never a traceback.
"""


class UserError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""

    exit_status = 2


class BinaryError(UserError):
    """The file given as a binary cannot be analysed."""
