"""Cross-cultural scenario benchmark: case ingest, geography, WEIRD annotation (DESIGN.md §6)."""
