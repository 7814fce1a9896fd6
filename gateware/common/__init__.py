"""Blocks shared by several nandlab cores (time base, ...)."""
