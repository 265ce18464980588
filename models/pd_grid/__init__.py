"""Mesa's own spatial prisoner's dilemma (``mesa.examples.advanced.pd_grid``), imported unchanged, as a game."""
