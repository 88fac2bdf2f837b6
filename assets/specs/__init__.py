"""Azure ML asset YAML (environments, models, data) and asset references, parsed without Django."""
