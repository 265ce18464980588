"""The network consensus game of the first study, on Mesa."""

from .agents import ConsensusAgent
from .model import ROUND_COLUMNS, ConsensusConfigError, ConsensusModel

__all__ = ["ConsensusAgent", "ConsensusConfigError", "ConsensusModel", "ROUND_COLUMNS"]
