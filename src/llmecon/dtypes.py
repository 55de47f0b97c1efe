"""Number formats, stored as bits (never integer-divided: fp4 is 0.5 byte).

Block-scaled formats carry their scale overhead in ``bits`` (sources below); ``compute`` lists the
tensor-core formats a matmul on weights of this type can run at, best first. A chip without a peak
for the first falls back to the next (weight-only quantisation dequantises in the kernel): fp4
weights run at the fp8 or bf16 peak on a chip with no fp4 units, for example.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import unknown_name


@dataclass(frozen=True, kw_only=True)
class DType:
    """A storage format: ``bits`` per element including block-scale overhead."""

    name: str
    bits: float
    compute: tuple[str, ...]
    note: str = ""

    @property
    def bytes(self) -> float:
        """Bytes per element (fractional for sub-byte formats)."""
        return self.bits / 8.0


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType(name="fp32", bits=32, compute=("fp32", "bf16")),
        DType(name="bf16", bits=16, compute=("bf16",)),
        DType(name="fp16", bits=16, compute=("fp16", "bf16"),
              note="fp16 dense tensor peaks equal bf16 on every catalogued chip"),
        DType(name="fp8", bits=8, compute=("fp8", "bf16"),
              note="e4m3/e5m2; DeepSeek's 128x128 block scales add 0.002 bit/element, omitted"),
        DType(name="fp8_block", bits=8, compute=("fp8", "bf16"),
              note="fp8 e4m3 with one fp32 scale per 128x128 weight block (DeepSeek-V3 checkpoints; 0.002 "
                   "bit/element, omitted): fp8 bytes and peak, priced with the block-scaled kernels' terms"),
        DType(name="int8", bits=8, compute=("int8", "fp8", "bf16")),
        DType(name="fp4", bits=4, compute=("fp4", "fp8", "bf16"), note="plain 4-bit, no scale overhead"),
        DType(name="mxfp4", bits=4.25, compute=("fp4", "fp8", "bf16"),
              note="OCP MX: 4-bit E2M1 + one 8-bit E8M0 scale per 32 elements = 4.25 bits"),
        DType(name="nvfp4", bits=4.5, compute=("fp4", "fp8", "bf16"),
              note="NVIDIA NVFP4: 4-bit E2M1 + one fp8 E4M3 scale per 16 elements = 4.5 bits"),
        DType(name="int4", bits=4, compute=("bf16",), note="weight-only W4A16: dequantised to bf16"),
    )
}
_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
            "e4m3": "fp8", "fp8_e4m3": "fp8", "e5m2": "fp8", "float8": "fp8"}


def get_dtype(name: str | DType) -> DType:
    """Look a dtype up by name (``bf16``, ``fp8``, ``mxfp4``...); unknown names get "did you mean"."""
    if isinstance(name, DType):
        return name
    if type(name) is str and name in DTYPES:  # the canonical name (every call in a step): one dict look-up
        return DTYPES[name]
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    if key not in DTYPES:
        raise unknown_name("dtype", str(name), DTYPES)
    return DTYPES[key]
