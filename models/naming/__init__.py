"""naming."""
