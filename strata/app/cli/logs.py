"""Where the command line's log records go, and the chat's friendly notices.

`--log-level` (or `-v`/`-vv`) chooses the level and `--log-file` a file (0600: records can
quote what people said) instead of stderr. A chat (`strata chat`, `strata run --console`)
writes raw records to stderr only from `error` up unless asked otherwise: timestamped warnings
between the replies read as noise. Instead, each known problem is said once per run in one
line with its fix (`ProblemNotices`), e.g. "embeddings unavailable (…): recall uses keywords
only until they are back; run `strata doctor`". Every record is printed through
`strata.bot.visible` (a message quoted in a log line cannot drive the terminal either).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from pathlib import Path

from strata.bot.visible import say, visible
from strata.core.errors import ConfigError, ModelError
from strata.core.private_files import FILE_MODE

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# (what the error message starts with, the problem's key, what it means and what to do)
KNOWN = (
    ("embedding model", "embeddings",
     "embeddings unavailable ({detail}): recall uses keywords only until they are back; "
     "run `strata doctor`"),
    ("chat model", "chat",
     "the chat model is unavailable ({detail}): your messages are kept and answered once it "
     "is back; run `strata doctor`"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-v info, -vv debug); see --log-level")
    parser.add_argument("--log-level", choices=list(LEVELS), default=None,
                        help="log records from this level up (default warning; error on "
                        "stderr in a chat, where problems are said in one line instead)")
    parser.add_argument("--log-file", default=None,
                        help="append log records to this file (0600) instead of stderr")
    parser.add_argument("--log-format", choices=["text", "json"], default=None,
                        help="log records as text or one JSON object each (default "
                        "web.log_format, text)")


class VisibleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


class PrivateFileHandler(logging.FileHandler):
    """A log file only its owner can read, created so, appended to."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        return open(fd, "a", encoding="utf-8", errors="replace")


class ProblemNotices(logging.Handler):
    """One friendly line on stderr per known problem (`KNOWN`), the first time it is logged."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        found = problem(record)
        if found is None or found[0] in self.said:
            return
        self.said.add(found[0])
        say(found[1], file=sys.stderr, flush=True)


def problem(record: logging.LogRecord) -> tuple[str, str] | None:
    """(key, friendly line) for a record about a known problem, else None."""
    args = record.args if isinstance(record.args, tuple) else ()
    errors = [a for a in args if isinstance(a, ModelError)]
    if record.exc_info and isinstance(record.exc_info[1], ModelError):
        errors.append(record.exc_info[1])
    for error in errors:
        for prefix, key, text in KNOWN:
            if str(error).startswith(prefix):
                return key, text.format(detail=error)
    return None


def json_formatter() -> logging.Formatter:
    try:
        from pythonjsonlogger.json import JsonFormatter  # the `web` extra
    except ImportError:
        raise ConfigError("JSON logs need python-json-logger: pip install 'strata[web]'") \
            from None
    formatter: logging.Formatter = JsonFormatter(FORMAT.replace("%(name)s:", "%(name)s"))
    return formatter


def setup(args: argparse.Namespace, form: str = "text") -> None:
    """Route log records as `args` ask, as text or JSON lines (`form`), replacing what an
    earlier call installed: the command line's own choice comes before the settings are read,
    the configured format (`web.log_format`) once they are."""
    chatting = args.command == "chat" or (args.command == "run" and getattr(args, "console",
                                                                              False))
    if args.log_level is not None:
        level = LEVELS[args.log_level]
    elif args.verbose:
        level = logging.DEBUG if args.verbose > 1 else logging.INFO
    else:
        level = logging.ERROR if chatting and args.log_file is None else logging.WARNING
    handler: logging.Handler = (PrivateFileHandler(Path(args.log_file).expanduser(),
                                                   delay=True)
                                if args.log_file else logging.StreamHandler(sys.stderr))
    handler.setLevel(level)
    # JSON lines escape control characters themselves; text goes through `strata.bot.visible`.
    handler.setFormatter(json_formatter() if form == "json" else VisibleFormatter(FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "strata", False)]:
        root.removeHandler(old)
        old.close()
    installed = [handler, *([ProblemNotices()] if chatting else [])]
    for h in installed:
        h.strata = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(min(level, logging.WARNING) if chatting else level)
