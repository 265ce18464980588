"""Mesa's own Boltzmann wealth model (``mesa.examples.basic.boltzmann_wealth_model``) as an llm-mesa game.

Imported, not copied: the model and its agents are subclasses of Mesa's, its DataCollector
is Mesa's. The core finds the game through ``game.py`` (entry point ``boltzmann_wealth_model``).
"""
