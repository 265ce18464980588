"""Mesa's own virus on a network (``mesa.examples.basic.virus_on_network``), imported unchanged, as a game."""
