"""The app's log: one line per event, "[accapp] ...", every value a visitor sent escaped.

Every accapp logger writes through :class:`OneLineFormatter` (installed once by :func:`configure`):
a record's text has its control characters written as escapes (``errors.escape_controls``), so
a model id such as ``"x\\n[accapp] FORGED LINE"`` stays inside its own line and no visitor can
write a line of their own, colour the terminal (ANSI escapes) or hide text (NUL). An unexpected
error is logged as one line too: its type, its message and where it was raised; the whole traceback
follows, each line behind ``[accapp] |``, only with ``ACCAPP_DEBUG=1``.

:func:`refused` and :func:`failed` are the two lines a handler writes about a visitor's request:
refused (the visitor's input: a message was shown) and failed (our fault: a message was shown,
and the error is named for whoever reads the log).
"""

from __future__ import annotations

import logging
import sys
import traceback

from accapp import settings
from accapp.errors import escape_controls, shown  # noqa: F401 - shown: the log lines' own cut

PREFIX = "[accapp] "
MAX_LOGGED_CHARS = 300  # a logged message keeps this much of what a visitor sent


class OneLineFormatter(logging.Formatter):
    """"[accapp] message" with control characters escaped; an exception in one line (the full
    traceback, each line prefixed, only when ACCAPP_DEBUG=1)."""

    def __init__(self, debug: bool | None = None) -> None:
        super().__init__(PREFIX + "%(message)s")
        self.debug = settings.flag("ACCAPP_DEBUG") if debug is None else debug

    def format(self, record: logging.LogRecord) -> str:
        line = PREFIX + escape_controls(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            line += " | " + error_line(record.exc_info[1])
            if self.debug:
                text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
                line += "".join(f"\n{PREFIX}| {escape_controls(part)}" for part in text.split("\n"))
        return line

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        return error_line(ei[1])


def error_line(exc: BaseException) -> str:
    """An error in one line: its type, its message (escaped, cut) and the innermost place it was raised."""
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" (at {tb.tb_frame.f_code.co_filename.rsplit('/', 2)[-1]}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name})"
    return f"{type(exc).__name__}: {shown(str(exc), MAX_LOGGED_CHARS)}{where}"


def configure(stream=None) -> None:
    """Every accapp logger's lines on stdout (or `stream`) through OneLineFormatter, once."""
    root = logging.getLogger("accapp")
    if not any(getattr(h, "accapp", False) for h in root.handlers):
        handler = logging.StreamHandler(stream or sys.stdout)
        handler.setFormatter(OneLineFormatter())
        handler.accapp = True
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        root.propagate = False


def refused(log: logging.Logger, where: str, message: str) -> None:
    """One line: a visitor's request was refused with this message."""
    log.warning("%s refused: %s", where, shown(message, MAX_LOGGED_CHARS))


def failed(log: logging.Logger, where: str, exc: BaseException) -> None:
    """One line: a request failed on our side (the visitor saw a message): the error and where it was raised."""
    log.error("%s failed", where, exc_info=(type(exc), exc, exc.__traceback__))
