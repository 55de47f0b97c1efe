"""One step's physics: pure, vectorised FLOPs, bytes, communication and time (roofline, collectives,
inference, calibrated kernels)."""
