"""What the GPU machine has (docs/gpu-record.md records it): Python, torch, CUDA, transformers,
bitsandbytes, the GPU's name, memory (total, and free now: device.sh full-start auto sizes its
processes from it, scripts/gpu/procs.py) and driver. Prints one JSON object."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess


def version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> None:
    import torch

    info = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "transformers": version("transformers"),
            "tokenizers": version("tokenizers"), "bitsandbytes": version("bitsandbytes"), "gguf": version("gguf"),
            "accelerate": version("accelerate"), "pandas": version("pandas"), "pyarrow": version("pyarrow"),
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "float32_matmul_precision": torch.get_float32_matmul_precision()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        free, total = torch.cuda.mem_get_info(0)
        info.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / 1024**3, 1), capability=f"{p.major}.{p.minor}",
                    multiprocessors=p.multi_processor_count, gpu_free_mib=free // 2**20, gpu_total_mib=total // 2**20)
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["driver"] = None
    info["cpu_count"] = __import__("os").cpu_count()
    print(json.dumps(info))


if __name__ == "__main__":
    main()
