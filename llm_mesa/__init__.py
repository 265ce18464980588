"""llm-mesa."""
