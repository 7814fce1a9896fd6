"""nandlab: FPGA prototype of an ONFI NAND flash controller and a peak-current power manager."""
