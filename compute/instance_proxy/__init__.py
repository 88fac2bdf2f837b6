"""The browser proxy to compute instances: Dockyard's second data plane (docs/layout.md).

app.py is the ASGI app controlplane/asgi.py mounts at /instances/; access.py answers who may open what and where its
server is (the database and the cluster's credentials); rules.py is what changes on the way through (pure).
"""
