"""dockyard model create | list | show | archive (cli/commands/asset.py builds the verbs)."""
from ..resources.asset import MODEL
from .asset import asset_group

model = asset_group(MODEL)
