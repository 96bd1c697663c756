"""Placeholder package: filled by later issues."""

__all__: list[str] = []
