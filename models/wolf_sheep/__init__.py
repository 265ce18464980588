"""Mesa's own wolf-sheep predation model (``mesa.examples.advanced.wolf_sheep``), imported unchanged, as a game."""
