"""Acceptability Explorer: `python app.py` starts the web app (see accapp/ui/app.py).

On a ZeroGPU Space this is the app_file: `spaces` is imported before torch (accapp/service/gpu.py).
"""
from accapp.models.release import restart_with_returning_allocator  # light: no torch, no gradio

if __name__ == "__main__":
    restart_with_returning_allocator()  # first: allocators that give an unloaded model's memory back
    from accapp.service import gpu  # noqa: F401 - then `spaces` (ZeroGPU's), before torch
    from accapp.ui.app import main
    main()
