"""Statistics, tables and plots shared by every benchmark's analysis."""
