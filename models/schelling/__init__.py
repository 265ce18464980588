"""Mesa's own Schelling segregation model (``mesa.examples.basic.schelling``), imported unchanged, as a game."""
