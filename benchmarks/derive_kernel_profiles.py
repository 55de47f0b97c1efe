"""Derive the kernel-table efficiency profiles (src/llmecon/catalog/profiles/<chip>-<engine>.toml)
from NVIDIA's measured kernel tables in ../shared/validation/aiconfigurator/kernels, for the six
measured chips (h100-sxm, h200, b200, b300, gb200, gb300) and three engines (trtllm, sglang, vllm):
``fidelity.kernel_profiles.derive``. Run:

    python benchmarks/derive_kernel_profiles.py [--write] [--only CHIP/ENGINE]

Without --write it prints the profiles; with it, it rewrites the files. With --extras-only it
refits only the MLA attention tables (``with_mla``), the Gated DeltaNet kernels (``with_gdn``), the
MXFP4 MoE terms of Hopper (``with_mxfp4_moe``) and the EP all-to-all link terms
(``with_all_to_all``) of the shipped files, keeping every other term (engine terms fitted later on
end-to-end rows included). The out-of-sample error of
the same fit is benchmarks/kernel_accuracy.py's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from llmecon.catalog.efficiency import load_profile
from llmecon.fidelity.kernel_profiles import ALL, derive, with_all_to_all, with_gdn, with_mla, with_mxfp4_moe
from llmecon.fidelity.kernel_tables import default_root

OUT = Path(__file__).resolve().parents[1] / "src" / "llmecon" / "catalog" / "profiles"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite src/llmecon/catalog/profiles/<chip>-<engine>.toml")
    ap.add_argument("--only", help="one chip/engine, e.g. b200/sglang")
    ap.add_argument("--extras-only", action="store_true",
                    help="refit only the MLA, GDN, MXFP4-MoE and all-to-all terms of the shipped profiles")
    args = ap.parse_args()
    root = default_root()
    if root is None:
        raise SystemExit("../shared/validation/aiconfigurator/kernels not found (the measured tables are not shipped)")
    for chip, engine in ALL:
        if args.only and args.only != f"{chip}/{engine}":
            continue
        t0 = time.perf_counter()
        path = OUT / f"{chip}-{engine}.toml"
        if args.extras_only:
            prof = with_mla(load_profile(path), root, chip, engine)
            prof = with_mxfp4_moe(with_gdn(prof, root, chip, engine), root, chip, engine)
            prof = with_all_to_all(prof, root, chip)
        else:
            prof = derive(root, chip, engine)
        text = prof.as_toml()
        if args.write:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({time.perf_counter() - t0:.1f} s)")
        else:
            print(text)


if __name__ == "__main__":
    main()
