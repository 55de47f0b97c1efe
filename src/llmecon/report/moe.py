"""MoE deployment results (``llmecon moe``) as a JSON-ready dict and a two-panel figure.

Everything here formats a ``moe.MoeSummary``; no formula lives in this module.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from ..econ.moe import MoeSummary
from .figure import pyplot, save_figure

TIER_LABELS = {"none": "one chip", "scale_up": "in domain", "two_tier": "across domains"}
TIER_COLOURS = {"none": "0.5", "scale_up": "C0", "two_tier": "C3"}

MOE_UNITS = ("SI: *_params are parameter counts, *_bytes bytes, *_s seconds; chip_s_per_token is chip-seconds "
             "per generated token (step_s x chips / batch); batch_per_chip and batch are sequences decoding one "
             "token per step; touched maps a batch of tokens to the expected fraction of routed experts hit; "
             "busiest_experts/mean_experts map it to the experts per MoE layer the busiest/mean expert group of "
             "ep pp_ep reads; "
             "stage_ratios maps layers per pipeline stage to 2kL/(BW_up/BW_out), viable where >= 1")


def tier_label(tier: str) -> str:
    """Human name of an all-to-all tier ("scale_up" -> "in domain")."""
    return TIER_LABELS.get(tier, tier)


def moe_dict(s: MoeSummary, *, law_source: str, law_file: str | None, hundred_expert_ratio: float) -> dict:
    """Every MoeSummary field (ep_rows/pp_rows as lists of dicts, dict keys as strings), plus the
    law's source, the --law file (null = the shipped default) and N̄/N at 100 experts."""
    out = {}
    for f in fields(s):
        value = getattr(s, f.name)
        if f.name in ("ep_rows", "pp_rows"):
            value = [asdict(r) for r in value]
        elif f.name == "fidelity_fields":
            value = dict(value)
        elif isinstance(value, dict):
            value = {str(k): float(v) for k, v in value.items()}
        out[f.name] = value
    out.update(law_source=law_source, law_file=law_file, hundred_expert_ratio=float(hundred_expert_ratio),
               units=MOE_UNITS)
    return out


def plot_moe(s: MoeSummary, domain_chips: int, path: str | Path) -> None:
    """(a) chip-seconds per token against the EP size, by all-to-all tier, filled where the batch
    fits in HBM; (b) the all-to-all time per decode step against the EP size, in domain vs two-tier.
    Both mark the scale-up domain size."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    rows = list(s.ep_rows)
    if rows:
        ax1.plot([r.ep for r in rows], [r.chip_s_per_token * 1e6 for r in rows], color="0.75", lw=1, zorder=1)
    seen = set()
    for r in rows:
        colour = TIER_COLOURS.get(r.tier, "k")
        key = (r.tier, r.fits)
        label = f"{tier_label(r.tier)}, {'fits' if r.fits else 'does not fit'}" if key not in seen else None
        seen.add(key)
        ax1.scatter([r.ep], [r.chip_s_per_token * 1e6], s=45, zorder=2, edgecolors=colour, linewidths=1.5,
                    facecolors=colour if r.fits else "none", label=label)
    if s.ep_best is not None:
        best = next(r for r in rows if r.ep == s.ep_best)
        ax1.scatter([best.ep], [best.chip_s_per_token * 1e6], marker="*", s=160, color="gold", edgecolors="k",
                    zorder=3, label=f"best: ep{best.ep}")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        if rows:
            ax.set_xticks([r.ep for r in rows], [str(r.ep) for r in rows])
            ax.minorticks_off()
        ax.axvline(domain_chips, color="k", ls="--", lw=1, label=f"domain: {domain_chips} chips")
        ax.set_xlabel("expert-parallel group = chips (attention data-parallel)")
    ax1.set_yscale("log")
    ax1.set_ylabel("chip-µs per token")
    ax1.set_title(f"(a) decode cost per token at {s.batch_per_chip:,.0f} sequences per chip")
    ax1.legend(fontsize=7)
    for tier in ("scale_up", "two_tier"):
        sel = [r for r in rows if r.tier == tier]
        if sel:
            ax2.plot([r.ep for r in sel], [r.all_to_all_s * 1e3 for r in sel], "o-", color=TIER_COLOURS[tier],
                     label=tier_label(tier) + (" (two-tier)" if tier == "two_tier" else ""))
    ax2.set_ylim(bottom=0)
    ax2.set_ylabel("all-to-all per decode step (ms)")
    ax2.set_title(f"(b) dispatch ({s.dispatch_dtype}) + combine, all MoE layers")
    ax2.legend(fontsize=7)
    fig.suptitle(f"{s.model} on {s.system}, context {s.context:,.0f}", fontsize=10)
    save_figure(fig, path)
