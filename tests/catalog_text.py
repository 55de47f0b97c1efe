"""Hand-written catalogue entries the loader tests build on (one place, so a schema change edits one text)."""

GOOD_ACCELERATOR = """
[chip]
vendor = "acme"
peak_flops = { bf16 = "100 TFLOP/s" }
hbm_capacity = "80 GB"
hbm_bandwidth = "1 TB/s"
status = "datasheet"
source = "hand-written test entry"
as_of = "2024-01-01"
"""
