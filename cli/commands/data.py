"""dockyard data create | list | show | archive (cli/commands/asset.py builds the verbs)."""
from ..resources.asset import DATA
from .asset import asset_group

data = asset_group(DATA)
