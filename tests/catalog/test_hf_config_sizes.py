"""Every config in ../shared/reference/hf_configs whose name states a size: the parameter counts
match the name to its rounding.

The published claim is the name itself (``397B-A17B``: 397B total, 17B active; ``8B``; ``120b``;
Llama 4 ``17B-128E``: 17B active). A name N with last non-zero digit of unit u accepts a count in
[N - u/2, N + u): rounded (Qwen3.5-397B: 396.8B) or truncated (Llama-3.1-405B: 405.85B,
Llama-3.3-Nemotron-Super-49B: 49.9B) — both conventions are in use; "120B" has u = 10.

Multimodal wrappers: llmecon's ``total`` is the language model; a name may include the vision
encoder (Qwen3-VL-2B: 1.72B LM + 0.33B vision) or not (Qwen3-VL-32B: 32.8B LM, 33.2B with vision),
so either basis is accepted there. Active counts: DeepSeek/Qwen cards count the embedding
(DeepSeek-V3 37B), NVIDIA's Nemotron-3 cards do not (Nemotron-3-Ultra "A55B": 56.1B with, 55.0B
without the 1.07B input embedding), so either is accepted. The configs are read when present and
the test skips, saying why, when the folder is absent.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from llmecon.catalog.hf_config import load_config_file

CONFIGS = Path(__file__).resolve().parents[3] / "shared" / "reference" / "hf_configs"
if not CONFIGS.is_dir():
    CONFIGS = Path("/work/shared/reference/hf_configs")
FILES = sorted(p for p in CONFIGS.glob("*_config.json") if not p.name.endswith("_hf_quant_config.json")) \
    if CONFIGS.is_dir() else []
_SIZE = re.compile(r"(?<![\dx.])(\d+(?:\.\d+)?)[bB](?:-A(\d+(?:\.\d+)?)B)?(?![a-zA-Z])")


def _claims(name: str) -> tuple[Decimal | None, Decimal | None] | None:
    model = name.split("--", 1)[1][: -len("_config.json")]
    m = _SIZE.search(model)
    if not m:
        return None
    size, active = Decimal(m.group(1)), (Decimal(m.group(2)) if m.group(2) else None)
    if re.search(rf"{m.group(1)}B-\d+E", model):  # Llama 4: "17B-128E" names the active count
        return None, size
    return size, active


def _band(n: Decimal) -> tuple[float, float]:
    digits = n.normalize().as_tuple()
    unit = Decimal(1).scaleb(digits.exponent)
    return float(n - unit / 2) * 1e9, float(n + unit) * 1e9


SIZED = [p for p in FILES if _claims(p.name)]


def test_the_sized_configs_are_there():
    if not FILES:
        pytest.skip(f"{CONFIGS} absent (../shared is not beside this clone)")
    assert len(SIZED) >= 45


@pytest.mark.parametrize("path", SIZED, ids=[p.name[: -len("_config.json")] for p in SIZED])
def test_name_size_matches_counted_parameters(path):
    total_claim, active_claim = _claims(path.name)
    model = load_config_file(path)
    p = model.params
    if total_claim is not None:
        lo, hi = _band(total_claim)
        bases = [p.total] + ([p.total + model.encoder_params] if model.encoder_params else [])
        assert any(lo <= b < hi for b in bases), (path.name, [b / 1e9 for b in bases], lo / 1e9, hi / 1e9)
    if active_claim is not None:
        lo, hi = _band(active_claim)
        bases = [p.active, p.active_excluding_embedding]
        assert any(lo <= b < hi for b in bases), (path.name, [b / 1e9 for b in bases], lo / 1e9, hi / 1e9)
