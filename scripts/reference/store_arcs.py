"""Reads an outcore store's out-arcs for the in-memory reference scripts of this folder:
csr-out/offsets (u64) and csr-out/targets (u32), returned as (vertex count, sources, targets)
with self-loops dropped. Duplicates and directions are left to the caller."""
import numpy as np


def load_arcs(store):
    offsets = np.fromfile(f"{store}/csr-out/offsets", dtype="<u8")
    targets = np.fromfile(f"{store}/csr-out/targets", dtype="<u4")
    n = len(offsets) - 1
    sources = np.repeat(np.arange(n, dtype=np.uint32), np.diff(offsets).astype(np.int64))
    keep = sources != targets
    return n, sources[keep], targets[keep]
