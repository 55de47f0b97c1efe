"""Predictions against measurements: measurement files, vectorised predict, profile fitting,
accuracy, collective fits, the published validation sets and the torch microbenchmarks (measure/)."""
