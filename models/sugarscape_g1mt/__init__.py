"""Mesa's own Sugarscape with traders (``mesa.examples.advanced.sugarscape_g1mt``), imported unchanged, as a game."""
