"""Acceptability Explorer: `python app.py` starts the web app (see accapp/ui/app.py).

On a ZeroGPU Space (Gradio SDK) this file is the Space's app_file; `spaces` is imported first,
before torch, as ZeroGPU asks (accapp/service/gpu.py; without the package it is not imported).
"""

from accapp.service import gpu  # noqa: F401 - first: imports `spaces` where it is installed
from accapp.ui.app import main

if __name__ == "__main__":
    main()
