"""Kubernetes knowledge shared by every app; the pure modules here import nothing of Django."""
