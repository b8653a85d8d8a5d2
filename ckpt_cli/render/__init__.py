"""Presentation: result objects -> rich tables or JSON. No file I/O here."""
