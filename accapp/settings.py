"""Every ``ACCAPP_*`` environment setting in one place: its default, its bounds and what it does.

A leaf module (the standard library only), read by every layer. Each value is read from the
environment when asked for (a test or a Space may set it before the module that uses it loads);
a blank value means the default, and a value outside the bounds is brought inside them, so no
setting can make a queue unbounded or a limit negative. A value that is not a number gives the
default and one warning in the log naming the setting (a Space's typo must not take it down).

The README's settings table is generated from this list (``python -m accapp.settings``), and
``tests/test_settings.py`` checks that the two agree and that no ``ACCAPP_*`` name is read
elsewhere without being listed here. One name a meaning: a setting that was renamed keeps its old
name as ``old_name``, still read (with a warning) where the new one is not set, never a setting of its own.

How much is done at once: one name for each meaning, here and in the code.
- ``batch_size`` (CausalScorer, MaskedScorer, ``engine.build_engine``, the CLI's ``--batch-size``, the
  runner's config): sequences one forward pass takes (a causal LM's strings, a masked LM's masked
  copies); default ``scoring/pass_size.DEFAULT_BATCH`` (64), on a GPU a causal LM's from free memory.
- ``head_chunk_rows`` (CausalScorer; ``pass_size.DEFAULT_HEAD_ROWS`` for the masked scorer): hidden-state
  rows one vocabulary projection takes.
- ``ACCAPP_PROBE_BATCH``: waiting probes for one model scored together in one engine call (service/host.py).
- ``ACCAPP_PROBE_CONCURRENCY`` / ``ACCAPP_FILE_CONCURRENCY``: probes / file jobs running at once (each queue's).
- ``ACCAPP_PER_MODEL_CONCURRENCY``: requests scoring with one model at once.
- A file job's step: ``ACCAPP_FILE_STEP_S`` of model time, at most ``service/score_file.MAX_CHUNK`` pairs.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # "int", "float", "bytes" (6GB, 1500MB), "flag" (1/0), "text", "path", "list" (comma-separated)
    default: object  # None: computed where it is used (said in `default_text`)
    meaning: str
    minimum: float | None = None
    maximum: float | None = None
    default_text: str | None = None  # how the README states the default, where it is not a constant
    group: str = "app"  # "app" (the web app's limits and queues), "models", "gpu", "paths", "tools"
    old_name: str | None = None  # the name it had before: read where this one is not set, with a warning


SETTINGS: tuple[Setting, ...] = (
    # ---- the app's queues and limits (accapp/service/file_jobs.py, accapp/ui/queues.py, accapp/service/host.py,
    # accapp/ui/app.py)
    Setting("ACCAPP_PROBE_CONCURRENCY", "int", 16, "events running at once in each queue but the file jobs' "
            "(Explore's included); the probe queue (probes, prompts, `/probe`) admits this or two `ACCAPP_PROBE_BATCH` "
            "batches, whichever is more; its old name `ACCAPP_CONCURRENCY` is still read", 1, 256,
            old_name="ACCAPP_CONCURRENCY"),
    Setting("ACCAPP_PROBE_BATCH", "int", 16, "waiting probes for one model scored together, at most this many an "
            "engine call", 1, 256),
    Setting("ACCAPP_FILE_CONCURRENCY", "int", 2, "file jobs running at once (a queue of their own)", 1, 64),
    Setting("ACCAPP_FILE_QUEUE_MAX", "int", 8, "file jobs waiting; one more is refused with a message", 0, 1024),
    Setting("ACCAPP_FILE_JOBS_PER_VISITOR", "int", 1, "file jobs a visitor (a Gradio session) may have queued or "
            "running; another is refused at once, saying where the first stands", 1, 64),
    Setting("ACCAPP_QUEUE_MAX", "int", 64, "events waiting in all queues together", 1, 4096),
    Setting("ACCAPP_FILE_STEP_S", "float", 0.5, "the model time one step of a file job aims at (s)", 0.05, 60),
    Setting("ACCAPP_FILE_QUIET_STEP_S", "float", 2.0, "the same when no probe came in the last 10 s (fewer, larger "
            "steps)", 0.05, 600),
    Setting("ACCAPP_FILE_MAX_WAIT_S", "float", 5.0, "a file step that has waited this long for the model goes in turn "
            "with the probes (s)", 0.1, 600),
    Setting("ACCAPP_TOP_K", "int", 5, "the probe's \"what the model expected instead\": the most probable next tokens "
            "listed at each position (from the pass that scores the sentence); `0`: none", 0, 20),
    Setting("ACCAPP_PROBE_CACHE", "int", 256, "probe answers kept for repeats (one entry a model's stage of a pair; the "
            "least recently used dropped); `0`: none kept, and the teaching gallery's shipped answers unused too", 0,
            100_000),
    Setting("ACCAPP_PER_MODEL_CONCURRENCY", "int", 1, "requests scoring with one model at once", 1, 64),
    Setting("ACCAPP_MAX_UPLOAD_MB", "float", 20.0, "an upload (Gradio's `max_file_size`: cut off while it streams), "
            "MB", 0.01, 20),
    Setting("ACCAPP_UI_MAX_ROWS", "int", 5000, "rows of a file the app scores", 1, 100_000),
    Setting("ACCAPP_MANY_PAIRS_MAX", "int", 50, "lines of the Probe tab's many-pairs box probed at once (one pair a "
            "line); more are refused with a message", 1, 1000),
    Setting("ACCAPP_MAX_REQUEST_KB", "int", 1024, "any other request body (413 beyond it), KB", 1, 1_048_576),
    Setting("ACCAPP_SESSIONS", "int", 1000, "visitors' page states Gradio keeps", 1, 1_000_000),
    Setting("ACCAPP_PRELOAD", "flag", True, "`0`: do not warm the default model at start"),
    # ---- models (accapp/models/)
    Setting("ACCAPP_MEMORY_BUDGET", "bytes", None, "memory for loaded models (`6GB`, `1500MB`, bytes)",
            default_text="60 % of the machine's memory (or its container's limit) less 1 GiB; on CUDA 90 % of the "
                         "GPU's memory less 1 GiB", group="models"),
    Setting("ACCAPP_LARGE_MODEL_PARAMS", "float", 1e9, "on the CPU models above this load in bf16, or 4-bit NF4 where "
            "bf16 does not fit; on CUDA models from this size load in 4-bit NF4, smaller ones in bf16", 1e6, 1e13,
            group="models"),
    Setting("ACCAPP_ALLOCATOR_RESTART", "flag", True, "`0`: `python app.py` keeps the interpreter's own allocators. "
            "By default, on Linux, it restarts itself once at start with Python's objects on the C allocator "
            "(`PYTHONMALLOC=malloc`) and jemalloc where it is installed (else glibc's, `MALLOC_ARENA_MAX=2`), so that "
            "an unloaded model's memory goes back to the system; not where `PYTHONMALLOC` is already set",
            group="models"),
    Setting("ACCAPP_EXTRA_MODELS", "list", "", "the Space owner's allowlist beside the registry: comma-separated hub "
            "ids or paths", group="models"),
    Setting("ACCAPP_ALLOW_ANY_MODEL", "flag", False, "`1`: any hub id, folder or .gguf file (a local run, never a "
            "public Space)", group="models"),
    Setting("ACCAPP_CACHE", "path", None, "where converted models and unigram tables are kept",
            default_text="`~/.cache/accapp`", group="paths"),
    Setting("ACCAPP_RESULTS_DIR", "path", None, "the results folder Explore and `report` read",
            default_text="`precomputed/results`", group="paths"),
    Setting("ACCAPP_BENCHMARKS", "list", "", "benchmark descriptor files (JSON, as accapp/data/benchmarks.json) "
            "read beside the built-in ones: comma-separated paths; each descriptor's data file is named relative to "
            "its file", group="paths"),
    # ---- ZeroGPU (accapp/service/gpu.py)
    Setting("ACCAPP_SPACES", "flag", True, "`0`: never import the `spaces` package (ZeroGPU's), even where it is "
            "installed", group="gpu"),
    Setting("ACCAPP_GPU_BASE_S", "float", 10.0, "ZeroGPU only: the GPU seconds every model call asks for", 1, 600,
            group="gpu"),
    Setting("ACCAPP_GPU_PAIR_METHOD_S", "float", 0.15, "ZeroGPU only: and per pair x method", 0.001, 60, group="gpu"),
    Setting("ACCAPP_GPU_MAX_S", "float", 120.0, "ZeroGPU only: the most a call asks for", 1, 3600, group="gpu"),
    # ---- tools
    Setting("ACCAPP_COMMIT", "text", None, "the code's commit, recorded in run manifests where the code travels "
            "without its .git (a GPU machine)", default_text="`git rev-parse HEAD`", group="tools"),
    Setting("ACCAPP_DEBUG", "flag", False, "`1`: the CLI prints a traceback with an unexpected error", group="tools"),
)

BY_NAME = {s.name: s for s in SETTINGS}
OLD_NAMES = {s.old_name: s.name for s in SETTINGS if s.old_name}  # an old name -> the setting's name now


def _raw(name: str) -> str:
    if name not in BY_NAME:
        hint = f" (now {OLD_NAMES[name]})" if name in OLD_NAMES else ""
        raise KeyError(f"{name} is not a listed setting{hint} (accapp/settings.py)")
    value = os.environ.get(name, "").strip()
    old = BY_NAME[name].old_name
    if not value and old and os.environ.get(old, "").strip():
        log.warning("%s is the old name of %s: set %s instead", old, name, name)
        value = os.environ[old].strip()
    return value


def _bounded(s: Setting, value: float) -> float:
    if s.minimum is not None:
        value = max(s.minimum, value)
    if s.maximum is not None:
        value = min(s.maximum, value)
    return value


def number(name: str, default: float | None = None) -> float | None:
    """A numeric setting within its bounds (blank, unset or not a number: its default, or ``default``
    where the listed default is computed elsewhere)."""
    raw = _raw(name)
    s = BY_NAME[name]
    fallback = s.default if s.default is not None else default
    if not raw:
        return fallback
    try:
        value = float(raw)
    except ValueError:
        log.warning("%s=%r is not a number: using %s (%s)", name, raw, fallback, s.meaning)
        return fallback
    return _bounded(s, value)


def integer(name: str, default: int | None = None) -> int:
    value = number(name, default)
    return None if value is None else int(value)


def flag(name: str) -> bool:
    """A yes/no setting: 1, true, yes (any case) are yes; 0, false, no are no; blank: its default."""
    raw = _raw(name).lower()
    if not raw:
        return bool(BY_NAME[name].default)
    return raw in ("1", "true", "yes", "on")


def text(name: str) -> str:
    """A text, path or byte-size setting as given ('' when unset: its default is computed where used)."""
    return _raw(name)


def items(name: str) -> list[str]:
    """A comma-separated list setting."""
    return [part.strip() for part in _raw(name).split(",") if part.strip()]


def markdown_table(groups: tuple[str, ...] = ("app", "models", "gpu", "paths", "tools")) -> str:
    """The README's table: name, default, bounds, meaning."""
    rows = ["| setting | default | bounds | what it sets |", "|---|---|---|---|"]
    for s in SETTINGS:
        if s.group not in groups:
            continue
        default = s.default_text or (("1" if s.default else "0") if s.kind == "flag" else
                                     "(none)" if s.default in ("", None) else f"{s.default:g}" if isinstance(s.default, float)
                                     else str(s.default))
        bounds = "" if s.minimum is None and s.maximum is None else f"{s.minimum:g} to {s.maximum:g}"
        rows.append(f"| `{s.name}` | {default} | {bounds} | {s.meaning} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())


# ---- other programs' variables, read here too: one home, one rule each
TRUE_WORDS = ("1", "true", "yes", "on")  # huggingface_hub's rule for its flags (any case)


def hub_offline() -> bool:
    """HF_HUB_OFFLINE is set (huggingface_hub's own switch): never try the hub."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE_WORDS


def python_allocator() -> str:
    """PYTHONMALLOC: the allocator Python's objects use ('' when unset: Python's own, pymalloc)."""
    return os.environ.get("PYTHONMALLOC", "").strip()


def preloaded() -> str:
    """LD_PRELOAD: the libraries the dynamic linker loads first ('' when none)."""
    return os.environ.get("LD_PRELOAD", "").strip()


def environment_with(defaults: dict[str, str]) -> dict[str, str]:
    """This process's environment with `defaults` added where the user set none (for a child or an exec)."""
    return {**defaults, **os.environ}


def hf_token() -> str | None:
    """HF_TOKEN, where huggingface_hub's token store has none."""
    return os.environ.get("HF_TOKEN") or None


def gradio_temp_dir() -> str:
    """GRADIO_TEMP_DIR: Gradio's upload and cache folder ('' when unset)."""
    return os.environ.get("GRADIO_TEMP_DIR", "").strip()


def set_gradio_temp_dir(folder: str) -> None:
    """Point Gradio (and this app's temporary files) at `folder`."""
    os.environ["GRADIO_TEMP_DIR"] = folder


def server_address() -> tuple[str, int]:
    """Where the app listens: GRADIO_SERVER_NAME (127.0.0.1) and PORT, else GRADIO_SERVER_PORT (7860)."""
    host = os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    return host, int(os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or 7860)


def ray_address() -> str:
    """RAY_ADDRESS: the Ray cluster to join ('' when unset)."""
    return os.environ.get("RAY_ADDRESS", "").strip()


def switch_default(name: str, value: str) -> None:
    """Set a library's process-wide switch (an environment variable it reads) unless the user set it."""
    os.environ.setdefault(name, value)


def switch_set(name: str, value: str | None) -> str | None:
    """Set (or, with None, remove) a library's switch; returns the value it had, to put back."""
    before = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    return before
