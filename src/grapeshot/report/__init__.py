"""Tables, figures and the reproductions built on the rest of grapeshot (read-only)."""
