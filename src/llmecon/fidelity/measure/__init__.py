"""``llmecon measure``: microbenchmarks on a CUDA GPU with PyTorch, written as a measurement CSV
(``llmecon.fidelity.measurements``) that ``llmecon calibrate`` fits an efficiency profile from.

* ``kernels``: HBM copy bandwidth, bf16/fp8 GEMM sweeps, element-wise kernels (one function per
  benchmark, each returning ``Measurement`` rows), and the timer (CUDA events, warm-up, L2 flush,
  median of N).
* ``transformer``: a random-weight bf16 decoder built from a catalogue ``Model`` (dense GQA/MHA/MQA
  only), timed for decode steps (static KV cache, CUDA graph) and prefills (SDPA, causal).
* ``runner``: presets (``quick``, ``full``, ``cpu``), GPU detection and the catalogue ids it maps
  to, the sweep loop with a progress bar on stderr.

Nothing here imports torch at import time: ``import llmecon.fidelity.measure`` works without it, and the
runner raises a one-line ``SpecError`` with the install hint when torch is missing.
"""

from __future__ import annotations

__all__: list[str] = []
