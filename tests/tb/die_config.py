"""The die configuration the die tests build and check (shared by pytest and the cocotb module)."""

from nandlab.nand_model.parts import NandLabSLC
from nandlab.nand_model.reference import DieConfig


def make_config():
    # The default part's page (2048 + 64 bytes, 2 planes), 8 blocks of 4 pages; array times
    # divided by 1000 so a test moves through many operations.
    # Subplane registers are built (SDW-NFM): 2 planes x 4 subplanes, one block each. The part
    # is MPNFM-capable (512 + 16 byte pages on plane 1 in MPNFM mode).
    part = NandLabSLC(small_page_size=512, small_spare_size=16).scaled(blocks_per_lun=8, pages_per_block=4)
    return DieConfig(part, time_scale=1000, bad_blocks=(5,), with_sdw=True)
