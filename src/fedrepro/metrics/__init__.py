"""Metrics shared across papers (energy captured, FID/KID wrappers, noise estimates)."""
