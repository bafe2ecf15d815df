"""The project's own error types. A leaf module: imports nothing from the project.

Every failure that reaches a person or an operator is one of these, so callers can turn it into
an honest one-line message instead of a traceback.
"""

from __future__ import annotations


class StrataError(Exception):
    """Base class of every error Strata raises on purpose."""


class ConfigError(StrataError):
    """A configuration value is missing or invalid; the message names the key."""


class StorageError(StrataError):
    """The database cannot be opened or used as asked."""


class ExtensionUnavailableError(StorageError):
    """No SQLite driver that can load sqlite-vec (or has FTS5) is available."""


class DimensionMismatchError(StorageError):
    """The database was created with another embedding dimension."""


class WriteRefusedError(StorageError):
    """A write refused by its task's write guard (`strata.memory.engines.guard`): the
    condition it was allowed under, such as holding a person's jobs, no longer holds. The
    transaction was rolled back: it changed nothing."""


class PlatformError(StrataError):
    """A chat platform refused or failed the bot (bad credentials, unreachable server, a send
    that the server rejected)."""


class UnknownKindError(StrataError, ValueError):
    """A write named a kind outside a closed set (fact kinds, sources, roles)."""


class MutedSourceError(StrataError, ValueError):
    """A write came from a source whose profile does not feed that kind of memory."""


class ModelError(StrataError):
    """The model endpoint failed; `retryable` says whether trying later may help."""

    retryable: bool = True


class ModelUnavailableError(ModelError):
    """The endpoint cannot be reached, timed out, or answered 5xx after the retries."""


class ModelRateLimitedError(ModelError):
    """The endpoint kept answering 429 after the retries."""


class ModelBadResponseError(ModelError):
    """The endpoint answered, but with something unusable (malformed, empty, wrong shape)."""


class BudgetExhaustedError(ModelError):
    """A job run used its token budget: the model is not asked again in this run. Retryable
    like any model failure, so callers store nothing from the refused call and the work
    waits for the next run (with a fresh budget)."""


class ModelRequestError(ModelError):
    """The endpoint refused the request itself (4xx other than 429): retrying will not help."""

    retryable = False
