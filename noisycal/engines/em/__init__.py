"""EM and MAP-EM for the Dawid–Skene family.

This package holds the loop, constrained M-steps, the E-step, multi-start selection and
bootstrap refits."""

__all__: list[str] = []
