"""transformers' GGUF loading at the speed of the file, not of gguf's bookkeeping.

A load reads the file with gguf's GGUFReader up to three times (config, tokenizer, weights). Two
costs there are gguf's, and both are removed here, without changing a value read:

- the tensor-name map is built afresh for every module (397 for SmolLM2: 6.7 s of a 31 s load),
  though it depends only on the architecture and the number of blocks: kept (``lru_cache``);
- the reader slices a numpy memmap once per value, and a 49k-token vocabulary with its merges is
  about 440,000 values. A memmap runs Python code at every slice (``memmap.__array_finalize__``,
  ``__getitem__``): 3.2 s a read for SmolLM2's file. The reader here reads the same mapped bytes
  through a plain ndarray view of them: 0.8 s, the same fields and tensors (tests/test_any_model.py).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def plain_view_reader() -> type:
    """gguf's GGUFReader over a plain ndarray view of its memory map (the file is still mapped, not read)."""
    import gguf
    import numpy as np

    class PlainViewGGUFReader(gguf.gguf_reader.GGUFReader):
        @property
        def data(self):
            return self._bytes

        @data.setter
        def data(self, mapped) -> None:  # GGUFReader.__init__ sets a memmap; its view keeps the map alive
            self._bytes = mapped.view(np.ndarray)

    return PlainViewGGUFReader


def fast_gguf_reading() -> None:
    """Make transformers' next GGUF reads use the cached name map and the plain-view reader (idempotent;
    transformers imports both from the gguf package at each read)."""
    import gguf

    if not hasattr(gguf.get_tensor_name_map, "cache_info"):
        gguf.get_tensor_name_map = lru_cache(maxsize=8)(gguf.get_tensor_name_map)
    gguf.GGUFReader = plain_view_reader()
