"""Mesa's own spatial prisoner's dilemma (``mesa.examples.advanced.pd_grid``) as an llm-mesa game.

Imported, not copied: the model and its agents are subclasses of Mesa's, its DataCollector
is Mesa's. The core finds the game through ``game.py`` (entry point ``pd_grid``).
"""
