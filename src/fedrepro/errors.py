"""The errors a user can fix, in one place: the CLI and the pipeline steps print their message
without a stack trace (cli.USER_ERRORS), so the message alone must say what is wrong and what to do."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot be resolved; the message names the key and the allowed values."""


class DataError(Exception):
    """A dataset could not be fetched, verified or decoded."""


class ResultsError(Exception):
    """A result on disk is not what its run recorded (changed, incomplete or unverifiable): the message names
    the file and says how to recover."""


def config_error(source: str, problems: list[str]) -> ConfigError:
    """One error for every problem found in `source`: a single line when there is one problem."""
    if len(problems) == 1:
        return ConfigError(f"{source}: {problems[0]}")
    return ConfigError(f"{source}: {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems))
