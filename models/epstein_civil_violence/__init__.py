"""Mesa's own Epstein civil violence model (``mesa.examples.advanced.epstein_civil_violence``), imported unchanged."""
