"""nandlab SoC: the SoC class shared by every target and the targets themselves (sim, boards)."""

from nandlab.soc.nandlab_soc import NandLabSoC
