"""Error correction for the NAND channel: BCH encoder and decoder (bch.py) and their Python model (bchref.py)."""
