"""Specs: frozen facts, validated on construction, no I/O (hardware, model, plan, efficiency profile, prices)."""
