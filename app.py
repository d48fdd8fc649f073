"""Acceptability Explorer: `python app.py` starts the web app (see accapp/ui/app.py).

On a ZeroGPU Space (Gradio SDK) this file is the Space's app_file; `spaces` is imported first,
before torch, as ZeroGPU asks (accapp/service/gpu.py; without the package it is not imported).
"""

if __name__ == "__main__":
    from accapp.models.release import restart_with_returning_allocator

    restart_with_returning_allocator()  # before anything loads: allocators that give an unloaded model's memory back

from accapp.service import gpu  # noqa: E402 F401 - first of the app: imports `spaces` where it is installed
from accapp.ui.app import main  # noqa: E402

if __name__ == "__main__":
    main()
