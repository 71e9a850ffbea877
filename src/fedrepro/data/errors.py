"""The one exception the data layer raises for anything a user can fix."""

from __future__ import annotations


class DataError(Exception):
    """A dataset could not be fetched, verified or decoded.

    The message alone must tell the user what went wrong and what to do: the CLI
    prints it without a stack trace.
    """
