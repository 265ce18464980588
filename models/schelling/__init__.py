"""Mesa's own Schelling segregation model (``mesa.examples.basic.schelling``) as an llm-mesa game.

Imported, not copied: the model and its agents are subclasses of Mesa's, its DataCollector
is Mesa's. The core finds the game through ``game.py`` (entry point ``schelling``).
"""
