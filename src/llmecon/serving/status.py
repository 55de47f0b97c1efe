"""Request status codes and rejection reasons shared by the serving engine's modules."""

WAITING, RUNNING, DONE, REJECTED, FUTURE = 0, 1, 2, 3, 4
REASONS = ("", "kv_capacity", "queue_full")
