"""Parts of the plane papers as the papers give them: the DW/SDW-NFM paper's Table II per way count and
the MPNFM paper's Section V parts with its timing rule (tR constant, tPROG and tBERS x 1.1 per doubling
of the page), their assumptions named in the parts' sources."""

import math

import pytest

from nandlab.nand_model import parts

pytestmark = pytest.mark.unit


def test_dwsdw_table_ii_per_way():
    """Table II: 64 GB over 1, 2 or 4 ways: 64, 32, 16 GB NFMs of 512, 256, 128 pages per block, 8 KB pages,
    2 planes, tR 45 us, tPROG 700 us, tBERS 3.5 ms."""
    for model, pages, gib in (("DWSDW-MLC-64G", 512, 64), ("DWSDW-MLC-32G", 256, 32), ("DWSDW-MLC-16G", 128, 16)):
        p = parts.get_part(model)
        assert (p.pages_per_block, p.page_size, p.planes, p.bits_per_cell) == (pages, 8192, 2, 2)
        assert p.lun_bytes == gib << 30
        assert (p.t_r, p.t_prog, p.t_bers) == (45.0, 700.0, 3500.0)
        assert "Table II" in p.source and "assumed" in p.source


def test_mpnfm_section_v_parts_follow_the_timing_rule():
    base = parts.get_part("MPNFM-32-4")
    assert (base.page_size, base.small_page_size, base.lun_bytes) == (32768, 4096, 4 << 30)
    # The small array: 3 halvings from 32 KB: tPROG and tBERS at 1 / 1.1^3 = 75 %.
    assert base.small_time_percent == 75
    for kib in (2, 4, 8, 16, 32, 64):
        p = parts.get_part(f"SPNFM-{kib}K")
        assert p.page_size == kib * 1024 and p.lun_bytes == 4 << 30 and not p.is_mpnfm
        assert p.t_r == base.t_r                                    # tR does not depend on the page size
        doublings = math.log2(kib / 32)
        for attr in ("t_prog", "t_prog_lsb", "t_prog_msb", "t_bers"):
            # (whole microseconds, as a parameter page gives them)
            assert getattr(p, attr) == pytest.approx(getattr(base, attr) * 1.1 ** doublings, abs=0.5), (kib, attr)
        assert "Section V" in p.source and "assumed" in p.source
    # Worked numbers: a 2 KB page programs in 68.3 % of the 32 KB page's time, a 64 KB page in 110 %.
    assert parts.get_part("SPNFM-2K").t_prog / base.t_prog == pytest.approx(0.683, abs=5e-4)
    assert parts.get_part("SPNFM-64K").t_bers / base.t_bers == pytest.approx(1.1, abs=1e-4)
    assert parts.get_part("SPNFM-32K").t_prog == base.t_prog


def test_dwsdw_board_part_is_the_paper_part_with_small_pages():
    """DWSDW-MLC-2K: the DW/SDW part for board block RAM. Only the page (2 KiB + 64 B) and the cache
    commands differ from DWSDW-MLC-64G; it is the part the controller's multi-plane cocotb test runs its
    SDW dies with (tests/tb/controller_planes_tb.py), and the simulator takes it with SDW."""
    board, paper = parts.get_part("DWSDW-MLC-2K"), parts.get_part("DWSDW-MLC-64G")
    assert (board.page_size, board.spare_size, board.with_cache) == (2048, 64, False)
    same = ("bits_per_cell", "planes", "pages_per_block", "blocks_per_lun", "t_r", "t_prog", "t_prog_lsb",
            "t_prog_msb", "t_bers", "sdr_modes", "nvddr_modes")
    assert {a: getattr(board, a) for a in same} == {a: getattr(paper, a) for a in same}
    assert "shrunk" in board.source and "block RAM" in board.source
    import sys
    from nandlab.testing import TB_DIR
    sys.path.insert(0, str(TB_DIR))
    from controller_planes_tb import planes_test_config
    tb = planes_test_config().part
    scaled = board.scaled(blocks_per_lun=tb.blocks_per_lun, pages_per_block=tb.pages_per_block)
    assert {a: getattr(scaled, a) for a in same + ("page_size", "spare_size", "row_cycles", "column_cycles")} == \
        {a: getattr(tb, a) for a in same + ("page_size", "spare_size", "row_cycles", "column_cycles")}
    from nandlab.soc.targets import sim
    assert sim.nand_options(part="dwsdw-mlc-2k", blocks=8, pages=4, sdw=True)["part"] == "DWSDW-MLC-2K"
    with pytest.raises(ValueError, match="--nand-sdw: 6 blocks cannot give each of the 2 x 4 subplanes"):
        sim.nand_options(part="DWSDW-MLC-2K", blocks=6, pages=4, sdw=True)
