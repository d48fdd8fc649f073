"""The command line run inside the test process through ``accapp.cli.main(argv)`` (issue 33, part 4).

It answers what a shell would see (exit code, stdout, stderr, as a CompletedProcess) without a new
interpreter and its imports for every call. stderr also gets what the process would have printed to
its standard error through logging (any handler writing to it, and the last-resort handler's
warnings), so a check that no traceback reached the user still sees everything. Tests that need a
process of their own (a kill, an environment read at import such as HF_HOME) keep a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys


def _stream_handlers():
    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    return [h for lg in loggers for h in lg.handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]


@contextlib.contextmanager
def _logging_to(out: io.StringIO, err: io.StringIO):
    """Point every stream handler that writes to standard output or error at out or err meanwhile."""
    to_out = {id(s) for s in (sys.stdout, sys.__stdout__)}
    to_err = {id(s) for s in (sys.stderr, sys.__stderr__)}
    moved = []
    for h in _stream_handlers():
        target = out if id(h.stream) in to_out else err if id(h.stream) in to_err else None
        if target is not None:
            moved.append((h, h.stream))
            h.setStream(target)
    last_resort = logging.StreamHandler(err)  # where a process with no handler prints its warnings
    last_resort.setLevel(logging.WARNING)
    root = logging.getLogger()
    added = not root.handlers
    if added:
        root.addHandler(last_resort)
    try:
        yield
    finally:
        if added:
            root.removeHandler(last_resort)
        for h, stream in moved:
            h.setStream(stream)


def run_cli(*argv, threads: int | None = None) -> subprocess.CompletedProcess:
    """``python -m accapp ARGV`` in this process; ``threads`` stands for OMP_NUM_THREADS (torch's
    intra-op threads during the call). Torch's thread count is restored after (bench --threads sets it)."""
    import torch

    from accapp.cli import main

    args = [str(a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    restore = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with _logging_to(out, err), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse's refusals (and --help) exit as the process would
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, (int, type(None))):
                    print(exc.code, file=sys.stderr)
    finally:
        torch.set_num_threads(restore)
    return subprocess.CompletedProcess(["python", "-m", "accapp", *args], code, out.getvalue(), err.getvalue())
