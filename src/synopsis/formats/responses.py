"""Placeholder: filled in by the converter work."""
FORMAT = "responses"
