"""Per-layer attention settings of a Hugging Face config (``hf_config``).

Two conventions give some layers other attention settings than the top-level fields:

- ``per_layer_config``: a map from layer index (``"02"``, ``"5"``) to the fields that layer overrides
  (dots3 ``Dots3NoteTextConfig``: sliding layers with their own MLA rank and heads; Gemma 4's
  ``head_dim`` of its global layers);
- ``num_attention_heads_per_layer``: one query-head count per layer (Laguna ``LagunaConfig``; the
  K/V heads stay ``num_key_value_heads``).

``Model`` holds two attention specs: one for full-attention layers and one for windowed layers. So the
overrides are read when they take at most one value over the full layers and one over the windowed
ones (the pattern every config above follows); any other split, or an override of a field that is not
an attention setting, is refused naming the field and the layers.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CatalogError
from ..spec.layers import Attention

# Attention settings a layer may override (names as at the top level of the config).
ATTENTION_KEYS = frozenset({
    "num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "qk_head_dim", "attention_bias"})


def overrides(f, n_layers: int, where: str) -> list[dict] | None:
    """One dict of overridden fields per layer, or None when the config has no per-layer settings."""
    has_map, has_heads = f.has("per_layer_config"), f.has("num_attention_heads_per_layer")
    if not (has_map or has_heads):
        return None
    out: list[dict] = [{} for _ in range(n_layers)]
    if has_map:
        for key, value in f.get("per_layer_config", dict).items():
            try:
                i = int(key)
            except (TypeError, ValueError):
                raise CatalogError(f"{where}: per_layer_config key {key!r} is not a layer index") from None
            if not 0 <= i < n_layers or not isinstance(value, dict):
                raise CatalogError(f"{where}: per_layer_config[{key!r}] must map a layer in 0..{n_layers - 1} "
                                   "to an object of fields")
            unknown = sorted(set(value) - ATTENTION_KEYS)
            if unknown:
                raise CatalogError(f"{where}: per_layer_config[{key!r}] overrides '{unknown[0]}' = "
                                   f"{value[unknown[0]]!r}, which llmecon does not read per layer (only attention "
                                   "settings); if it changes nothing, pass {ignore_field} per_layer_config")
            out[i].update(value)
    if has_heads:
        heads = f.get("num_attention_heads_per_layer", list)
        if len(heads) != n_layers or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0
                                             for h in heads):
            raise CatalogError(f"{where}: field 'num_attention_heads_per_layer' must list a whole number of heads "
                               f"for each of the {n_layers} layers")
        for i, h in enumerate(heads):
            out[i].setdefault("num_attention_heads", h)
    return out


def split(f, per_layer: list[dict], windows: list[int], mixers: list[str], build: Callable[[dict], Attention],
          where: str, assumptions: list[str]) -> tuple[Attention, Attention | None]:
    """(full-layer attention, windowed-layer attention or None) from per-layer overrides; ``build``
    makes the attention spec of the config with the given fields overridden."""
    groups: dict[bool, set] = {False: set(), True: set()}
    for ov, w, m in zip(per_layer, windows, mixers):
        if m == "attention":
            groups[bool(w)].add(tuple(sorted(ov.items())))
    for windowed, values in groups.items():
        if len(values) > 1:
            kind = "windowed" if windowed else "full-attention"
            key = "per_layer_config" if f.has("per_layer_config") else "num_attention_heads_per_layer"
            text = repr(f.config[key])
            raise CatalogError(f"{where}: field '{key}' = {text if len(text) <= 60 else text[:57] + '...'} gives "
                               f"the {kind} layers {len(values)} different attention settings; llmecon models one "
                               "setting for full and one for windowed layers; if the difference is harmless, pass "
                               f"{{ignore_field}} {key}")
    full = dict(next(iter(groups[False]), ()))
    local = dict(next(iter(groups[True]), ()))
    main = build(full)
    if not groups[True] or local == full:
        if full:
            assumptions.append(f"per-layer attention settings: every attention layer {full}")
        return main, None
    assumptions.append(f"per-layer attention settings: full-attention layers {full or 'as the top level'}, "
                       f"windowed layers {local or 'as the top level'}")
    return main, build(local)
