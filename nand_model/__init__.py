"""nandlab die emulator: ONFI NAND target gateware, its timing, planes, page sizes and current waveform."""
