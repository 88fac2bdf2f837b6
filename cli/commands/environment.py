"""dockyard environment create | list | show | archive (cli/commands/asset.py builds the verbs)."""
from ..resources.asset import ENVIRONMENT
from .asset import asset_group

environment = asset_group(ENVIRONMENT)
