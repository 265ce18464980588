"""Explorer."""
