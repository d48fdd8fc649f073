"""What a person reads when something fails: a UserError's own message, plain words for running
out of memory or a GPU error, one line for anything else (the details go to the server log)."""

from __future__ import annotations

from accapp.errors import UserError

OOM_MESSAGE = ("The model ran out of memory on this machine. Try fewer methods, shorter sentences, "
               "a smaller file, or a smaller model.")
DEVICE_MESSAGE = ("The GPU reported an error while scoring; the model has been unloaded and loads again "
                  "with your next request. Try again.")


def is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def is_device_error(exc: BaseException) -> bool:
    """A CUDA / accelerator failure (not bad input): the model's state can no longer be trusted."""
    try:
        import torch

        if isinstance(exc, getattr(torch, "AcceleratorError", ())):
            return True
    except ImportError:
        pass
    return isinstance(exc, RuntimeError) and ("cuda error" in str(exc).lower() or "cublas" in str(exc).lower())


def message_of(exc: BaseException) -> str:
    """What a person sees for an exception: its message for UserError, a plain line otherwise."""
    if isinstance(exc, UserError):
        return str(exc)
    if is_oom(exc):
        return OOM_MESSAGE
    if is_device_error(exc):
        return DEVICE_MESSAGE
    return f"Something went wrong ({type(exc).__name__}: {str(exc)[:300]}). The details are in the server log."
