"""Which Gradio queue each event waits in (issue 22: probes must never wait behind file jobs)."""

PROBE_QUEUE = "score"  # interactive probes, prompts, the /probe API
FILE_QUEUE = "score"  # file scoring jobs
