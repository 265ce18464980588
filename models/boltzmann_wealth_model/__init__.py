"""Mesa's own Boltzmann wealth model (``mesa.examples.basic.boltzmann_wealth_model``), imported unchanged, as a game."""
