"""ONFI NAND interface: shared definitions and the phased bus (common.py); controller and PHYs as they land."""
