"""The network colouring game of Kearns, Suri and Montfort (Science 2006), on llm-mesa's public API alone.

The core finds it through ``game.py`` (entry point ``colouring``); the model is in
``model.py``, its parameters in ``parameters.py``.
"""
