"""The studio's forms: fields → the body the REST API and the CLI accept, that body as YAML, and pasted YAML.

One module per area (compute, instance_types, jobs, endpoints, workspaces); fields.py holds what every form shares
and yaml.py the one YAML reader and writer. The services stay the one validator: forms only shape bodies.
"""
