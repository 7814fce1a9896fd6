"""The nandstore litex_sim module (sw/sim/modules/nandstore) on its own: loaded with ctypes and driven
as litex_sim drives it (its pads as Verilator ports of each width, a tick after every evaluation),
for the pad widths, the read timing, the sparse array, the markers and the image files.

The simulated SoC uses it end to end (tests/test_sim_soc.py); the die's side of the pads is checked
cycle for cycle against the block RAM backend in tests/test_die.py."""

import ctypes
import ctypes.util
import json
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from nandlab import env, nandimage
from nandlab.errors import NandLabError
from nandlab.simulator import free_tcp_port

pytestmark = pytest.mark.unit

SRC = env.REPO / "sw" / "sim" / "modules" / "nandstore" / "nandstore.c"
ERASED = 0xFFFFFFFF


class PadS(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("len", ctypes.c_size_t), ("signal", ctypes.c_void_p)]


class PadListS(ctypes.Structure):
    pass


PadListS._fields_ = [("name", ctypes.c_char_p), ("pads", ctypes.POINTER(PadS)), ("index", ctypes.c_int),
                     ("next", ctypes.POINTER(PadListS))]


class ExtModuleS(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("start", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
                ("new_sess", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p)),
                ("add_pads", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(PadListS))),
                ("close", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
                ("tick", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64))]


@pytest.fixture(scope="module")
def module():
    """The module built as litex_sim's rules.mak builds it, loaded; its entry points and an event base."""
    import litex
    out = env.BUILD_DIR / "test" / "nandstore"
    out.mkdir(parents=True, exist_ok=True)
    inc = Path(litex.__file__).parent / "build" / "sim" / "core"      # modules.h, pads.h, error.h
    so = out / "nandstore.so"
    for cmd in (["gcc", "-c", "-Wall", "-O3", "-ggdb", "-fPIC", "-Werror", f"-I{inc}", "-o", str(out / "nandstore.o"),
                 str(SRC)],
                ["gcc", "-shared", "-fPIC", "-o", str(so), str(out / "nandstore.o"), "-levent"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # litex_sim's own binary brings json-c; here it is loaded first, global.
    ctypes.CDLL(ctypes.util.find_library("json-c"), mode=ctypes.RTLD_GLOBAL)
    event = ctypes.CDLL(ctypes.util.find_library("event"))
    event.event_base_new.restype = ctypes.c_void_p
    event.event_base_loop.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib = ctypes.CDLL(str(so))
    found = []
    register = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ExtModuleS))(lambda m: found.append(m.contents) or 0)
    assert lib.litex_sim_ext_module_init(register) == 0 and found[0].name == b"nandstore"
    base = event.event_base_new()
    assert found[0].start(base) == 0
    return found[0], event, base, register


def adr_bits(blocks, pages, page_bytes):
    return (max(blocks * pages * ((page_bytes + 3) // 4), 2) - 1).bit_length()


CTYPE = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}


class Store:
    """One module session as litex_sim runs it: a port per pad with the width Verilator gives it."""
    def __init__(self, module, dies=2, blocks=8, pages=4, page_size=2048, spare_size=64, markers=(), port=0,
                 image=None, widths=None, fast_erase=False):
        self.mod, self.event, self.base, _ = module
        self.page_words = (page_size + spare_size + 3) // 4
        aw = adr_bits(blocks, pages, page_size + spare_size)
        widths = widths or {}
        args = dict(dies=dies, blocks=blocks, pages=pages, page_size=page_size, spare_size=spare_size,
                    markers=[list(m) for m in markers], port=port)
        if image:
            args["image"] = str(image)
        self.sess = ctypes.c_void_p()
        self.rc = self.mod.new_sess(ctypes.byref(self.sess), json.dumps(args).encode())
        if self.rc:
            return
        self.clk = ctypes.c_uint8(0)
        self._keep = [self.clk]
        clk_pads = (PadS * 2)(PadS(b"sys_clk", 1, ctypes.addressof(self.clk)), PadS(None, 0, None))
        self._keep.append(clk_pads)
        assert self.mod.add_pads(self.sess, ctypes.byref(PadListS(b"sys_clk", clk_pads, 0, None))) == 0
        self.pads = []
        for d in range(dies):
            sigs = {}
            specs = [("rd_en", 1), ("rd_adr", aw), ("rd_data", 32), ("wr_en", 1), ("wr_adr", aw), ("wr_data", 32)]
            specs += [("er_en", 1)] if fast_erase else []
            pads = (PadS * (len(specs) + 1))()
            for i, (name, width) in enumerate(specs):
                width = widths.get(name, width)
                nbytes = 1 if width <= 8 else 2 if width <= 16 else 4 if width <= 32 else 8
                sigs[name] = CTYPE[nbytes](0)
                pads[i] = PadS(name.encode(), width, ctypes.addressof(sigs[name]))
            pads[len(specs)] = PadS(None, 0, None)
            self._keep += [pads, sigs]
            self.add_rc = self.mod.add_pads(self.sess, ctypes.byref(PadListS(b"nand_storage", pads, d, None)))
            self.pads.append(sigs)

    def cycle(self, **levels):
        """One clock cycle: the die's pads of the cycle (die=, rd=(adr), wr=(adr, data)), the rising edge
        evaluated, the module's tick; the falling edge; returns every die's rd_data after it."""
        d = levels.get("die", 0)
        p = self.pads[d]
        p["rd_en"].value, p["wr_en"].value = "rd" in levels, "wr" in levels
        if "er_en" in p:
            p["er_en"].value = "er" in levels
        if "rd" in levels:
            p["rd_adr"].value = levels["rd"]
        if "er" in levels:
            p["rd_adr"].value = levels["er"]
        if "wr" in levels:
            p["wr_adr"].value, p["wr_data"].value = levels["wr"]
        for clk in (1, 0):
            self.clk.value = clk
            assert self.mod.tick(self.sess, 0) == 0
        p["rd_en"].value = p["wr_en"].value = 0
        if "er_en" in p:
            p["er_en"].value = 0
        return p["rd_data"].value

    def read(self, adr, die=0):
        return self.cycle(die=die, rd=adr)

    def write(self, adr, value, die=0):
        self.cycle(die=die, wr=(adr, value))

    def request(self, line, port):
        """A control request over TCP, the event loop run as litex_sim runs it between cycles."""
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.setblocking(False)
            s.sendall(line.encode() + b"\n")
            answer, deadline = b"", time.monotonic() + 10
            while not answer.endswith(b"\n") and time.monotonic() < deadline:
                self.event.event_base_loop(self.base, 1)        # EVLOOP_ONCE
                try:
                    answer += s.recv(4096)
                except BlockingIOError:
                    pass
        return answer.decode().strip()

    def close(self):
        self.mod.close(self.sess)


@pytest.mark.parametrize("blocks, pages, page_bytes, width", [
    (2, 1, 4, 1),                 # 2 words: a 1-bit address, CData
    (8, 4, 2112, 15),             # the old sim dies: SData
    (1024, 64, 2112, 26),         # the sim default: IData
    (16384, 512, 8640, 35),       # DWSDW-MLC-64G's full LUN: QData
])
def test_widths_and_read_timing(module, blocks, pages, page_bytes, width):
    """Each Verilator port width is read and driven as its type; a read gives the word at the address
    presented in that cycle's tick (write of the same cycle included); rd_data stays put when no word
    is read; the last word of the die is reachable."""
    assert adr_bits(blocks, pages, page_bytes) == width
    st = Store(module, dies=1, blocks=blocks, pages=pages, page_size=page_bytes, spare_size=0)
    assert st.rc == 0 and st.add_rc == 0
    last = blocks * pages * st.page_words - 1
    assert st.read(last) == ERASED
    st.write(last, 0x12345678)
    assert st.read(last) == 0x12345678
    assert st.read(0) == ERASED
    assert st.cycle() == ERASED                 # no read: rd_data as it was
    st.write(0, 0xA5A5A5A5)
    assert st.cycle() == ERASED
    # A write and a read of one word in one cycle: the read sees it (the block RAM's write-first read).
    assert st.cycle(wr=(last, 0x0BADF00D), rd=last) == 0x0BADF00D
    st.close()


def test_pads_of_another_geometry_are_refused(module):
    """A simulator built for another geometry (address pads of another width) does not start."""
    st = Store(module, dies=1, blocks=1024, pages=64, widths={"rd_adr": 15})
    assert st.rc == 0 and st.add_rc != 0
    assert Store(module, dies=1, blocks=0).rc != 0


def test_sparse_pages_and_markers(module, tmp_path):
    """Only pages that are not erased are stored: a page with a word programmed is stored, erasing it
    (FFFFFFFFh over its words, as the engine's erase pass does) frees it and its block; a bad-block
    marker reads as given and stays."""
    pw = 528
    port = free_tcp_port()
    marker = (1, 5 * 4 * pw + 512, 0xFFFFFF00)          # die 1, block 5 page 0, spare byte 0 = 00h
    st = Store(module, dies=2, markers=[marker], port=port)
    assert st.rc == 0
    stats = lambda: st.request("stats", port)
    assert "1 pages in 1 blocks stored" in stats(), stats()
    assert st.read(marker[1], die=1) == 0xFFFFFF00 and st.read(marker[1], die=0) == ERASED
    base = (2 * 4 + 3) * pw                                # block 2, page 3
    st.write(base + 7, 0x00FF00FF)
    st.write(base + 9, 0x12345678)
    st.write(3 * 4 * pw + 1, ERASED)                       # an erased word written: nothing stored
    assert "2 pages in 2 blocks stored" in stats(), stats()
    assert [st.read(base + w) for w in (6, 7, 9)] == [ERASED, 0x00FF00FF, 0x12345678]
    for w in range(4 * pw):                                # erase block 2
        st.write(2 * 4 * pw + w, ERASED)
    assert "1 pages in 1 blocks stored" in stats(), stats()
    assert st.read(base + 7) == ERASED
    assert stats().endswith(f"6 words read, {3 + 4 * pw} written, 0 blocks erased at once")   # erased words counted too
    assert st.request("frob", port).startswith("error: unknown request 'frob'")
    st.close()


def test_erase_at_once(module, tmp_path):
    """Dies built with sim_fast_erase: er_en with the block's first word on rd_adr frees every page of
    the block in that cycle (the other blocks and dies, and the bad-block markers, stay as they were),
    and the erased words read FFFFFFFFh."""
    pw, port = 528, free_tcp_port()
    marker = (0, 5 * 4 * pw + 512, 0xFFFFFF00)              # die 0, block 5
    st = Store(module, dies=2, markers=[marker], port=port, fast_erase=True)
    assert st.rc == 0 and st.add_rc == 0
    stats = lambda: st.request("stats", port)
    for die, block, page in ((0, 2, 0), (0, 2, 3), (0, 3, 1), (1, 2, 0)):
        st.write((block * 4 + page) * pw + 7, 0x1234_0000 + block * 16 + page, die=die)
    assert "5 pages in 4 blocks stored" in stats(), stats()
    st.cycle(die=0, er=2 * 4 * pw)                          # erase die 0's block 2
    assert "3 pages in 3 blocks stored" in stats() and stats().endswith("1 blocks erased at once"), stats()
    assert [st.read((2 * 4 + p) * pw + 7) for p in (0, 3)] == [ERASED, ERASED]
    assert st.read((3 * 4 + 1) * pw + 7) == 0x1234_0031
    assert st.read((2 * 4) * pw + 7, die=1) == 0x1234_0020
    assert st.read(marker[1]) == 0xFFFFFF00
    st.cycle(die=0, er=2 * 4 * pw)                          # an erased block again: nothing to free
    assert "3 pages in 3 blocks stored" in stats(), stats()
    st.close()


def _program(st, die, adr, words):
    for i, w in enumerate(words):
        st.write(adr + i, w, die=die)


def test_image_save_load_and_refusals(module, tmp_path):
    """An image holds the pages that are not erased, with the geometry in its header; loading it
    brings them back (and drops pages programmed since); an image of another geometry, a damaged or
    foreign file is refused with the reason and changes nothing."""
    pw, port = 528, free_tcp_port()
    marker = (0, 6 * 4 * pw + 512, 0xFFFFFF00)
    st = Store(module, dies=2, markers=[marker], port=port)
    data = [(i * 0x01020304) & 0xFFFFFFFF for i in range(pw)]
    _program(st, 1, (7 * 4 + 3) * pw, data)                # die 1, block 7, page 3: the whole page
    img = tmp_path / "a.img"
    answer = st.request(f"save {img}", port)
    assert answer == f"ok saved 2 pages ({64 + 2 * (8 + 4 * pw)} bytes) to {img}", answer
    assert img.stat().st_size == 64 + 2 * (8 + 4 * pw) and not (tmp_path / "a.img.tmp").exists()
    header = nandimage.read_header(img)
    assert header.geometry == nandimage.Geometry(2, 8, 4, 2048, 64) and header.records == 2
    pages = nandimage.read_pages(img)
    assert set(pages) == {(0, 6, 0), (1, 7, 3)}
    assert pages[1, 7, 3] == struct.pack(f"<{pw}I", *data)
    assert pages[0, 6, 0][2048:2052] == b"\x00\xff\xff\xff"
    # Changed after the save: an erased page programmed, the saved one partly erased.
    st.write(100, 0x11111111, die=0)
    st.write((7 * 4 + 3) * pw, ERASED, die=1)
    assert st.request(f"load {img}", port) == f"ok loaded 2 pages from {img}"
    assert st.read(100, die=0) == ERASED
    assert [st.read((7 * 4 + 3) * pw + i, die=1) for i in range(pw)] == data
    assert st.read(marker[1], die=0) == 0xFFFFFF00
    assert "2 pages in 2 blocks stored" in st.request("stats", port)

    # Refusals: nothing changes.
    st.write(200, 0x22222222, die=0)
    other = Store(module, dies=2, blocks=16, pages=4, port=(p2 := free_tcp_port()))
    assert other.request(f"save {tmp_path / 'b.img'}", p2).startswith("ok saved 0 pages")
    answer = st.request(f"load {tmp_path / 'b.img'}", port)
    assert answer == (f"error: {tmp_path / 'b.img'} has another geometry: blocks per die 16 (the simulator's: 8)"), answer
    with pytest.raises(NandLabError, match=r"has another geometry: blocks per die 16 \(the simulator's: 8\)"):
        nandimage.check_geometry(tmp_path / "b.img", nandimage.Geometry(2, 8, 4, 2048, 64))
    damaged = tmp_path / "c.img"
    damaged.write_bytes(img.read_bytes()[:-5])
    assert "do not match the file's size" in st.request(f"load {damaged}", port)
    newer = bytearray(img.read_bytes())
    newer[8] = 2
    (tmp_path / "d.img").write_bytes(newer)
    assert "image format version 2, this simulator reads version 1" in st.request(f"load {tmp_path / 'd.img'}", port)
    (tmp_path / "e.img").write_bytes(b"hello")
    assert "is not a nandlab NAND image" in st.request(f"load {tmp_path / 'e.img'}", port)
    assert "cannot read" in st.request(f"load {tmp_path / 'none.img'}", port)
    assert "cannot write" in st.request(f"save {tmp_path / 'no' / 'x.img'}", port)
    assert st.read(200, die=0) == 0x22222222 and st.read(marker[1], die=0) == 0xFFFFFF00
    other.close()

    # An image given at start is there before the first cycle.
    st2 = Store(module, dies=2, markers=[marker], image=img)
    assert st2.rc == 0 and st2.read((7 * 4 + 3) * pw + 5, die=1) == data[5]
    st2.close()
    assert Store(module, dies=2, image=tmp_path / "b.img").rc != 0
    st.close()


# The sim target's NAND options -------------------------------------------------------------------------

def test_sim_nand_options_are_checked():
    """The sim SoC's geometry and storage options: the defaults, each refusal with its reason, and the
    build directory of a non-default choice."""
    from nandlab.soc.targets import sim
    assert sim.nand_options() == dict(part="NL-SLC-2K", blocks=1024, pages=64, storage="sim", sdw=False,
                                      time_scale=10)
    for kw, reason in ((dict(part="nope"), "unknown part 'nope'"),
                       (dict(pages=65), "65 pages per block: NL-SLC-2K takes 1..64"),
                       (dict(blocks=4096), "4096 blocks: NL-SLC-2K takes 2..2048, a multiple of its 2 plane"),
                       (dict(blocks=7), "7 blocks"),
                       (dict(storage="dram"), "NAND storage 'dram' unknown"),
                       (dict(storage="bram"), "132.0 MiB a die, the limit is 4 MiB"),
                       (dict(part="SPNFM-64K", blocks=16, pages=8), "SPNFM-64K: pages of 65536 \\+ 4096 B; the "
                                                                    "controllers' 16-bit"),
                      (dict(blocks=6, sdw=True), "6 blocks cannot give each of the 2 x 4 subplanes a block"),
                      (dict(time_scale=0), "--nand-time-scale 0: a whole number, 1"),
                      (dict(time_scale=1001), "--nand-time-scale 1001"),
                      (dict(time_scale=2.5), "--nand-time-scale 2.5")):
        with pytest.raises(ValueError, match=reason):
            sim.nand_options(**kw)
    assert sim.nand_options(blocks=8, pages=4, storage="bram")["storage"] == "bram"
    assert sim.nand_options(part="dwsdw-mlc-64g", blocks=16, pages=8)["part"] == "DWSDW-MLC-64G"
    assert sim.build_dir_name() == "sim" and sim.build_dir_name(8) == "sim8"
    assert sim.build_dir_name(8, blocks=8, pages=4, storage="bram") == "sim8-8x4-bram"
    assert sim.build_dir_name(part="DWSDW-MLC-64G", blocks=16, pages=8, idle_gating=False) == \
        "sim-dwsdw-mlc-64g-16x8-ungated"
    assert sim.build_dir_name(8, part="DWSDW-MLC-64G", sdw=True) == "sim8-dwsdw-mlc-64g-sdw"
    assert sim.build_dir_name(part="DWSDW-MLC-64G", sdw=True, time_scale=1) == "sim-dwsdw-mlc-64g-sdw-ts1"
    assert sim.build_dir_name(time_scale=10) == "sim"


def test_sim_soc_gives_the_module_its_dies():
    """The sim SoC at its defaults: 16 MiB of main RAM, every die's storage pads on a platform group the
    nandstore module takes, and the module's arguments: the geometry and every die's factory bad-block
    markers (bad_block_markers of the die's own DieConfig, as a block RAM die's initial contents)."""
    from nandlab.nand_model.die.common import bad_block_markers
    from nandlab.soc.targets import sim
    out = env.BUILD_DIR / "test" / "sim_nandstore"
    soc = sim.generate_headers(out, dies=2, channels=2)
    assert soc.bus.regions["main_ram"].size == 16 * 2**20
    args = soc.nandstore_args()
    assert {k: args[k] for k in ("dies", "blocks", "pages", "page_size", "spare_size")} == \
        dict(dies=4, blocks=1024, pages=64, page_size=2048, spare_size=64)
    configs = soc.nand_die_configs
    assert [c.bad_blocks for c in configs] == [sim.sim_bad_blocks(1024)(i) for i in range(4)]
    assert len({c.bad_blocks for c in configs}) == 4 and all(len(c.bad_blocks) == 2 for c in configs)
    assert all(512 <= b < 1024 for c in configs for b in c.bad_blocks)
    assert all(c.time_scale == sim.NAND_TIME_SCALE for c in configs)
    assert args["markers"] == [[i, w, v] for i, c in enumerate(configs) for w, v in sorted(bad_block_markers(c).items())]
    config = json.loads(sim.sim_config(nandstore=args).get_json())
    [module] = [m for m in config if isinstance(m, dict) and m.get("module") == "nandstore"]
    assert [i["index"] for i in module["interface"] if isinstance(i, dict) and i["name"] == "nand_storage"] == \
        [0, 1, 2, 3]
    # --nand-time-scale reaches the dies and the firmware's constant.
    soc1 = sim.generate_headers(env.BUILD_DIR / "test" / "sim_nandstore_ts1", dies=1, time_scale=1)
    assert [c.time_scale for c in soc1.nand_die_configs] == [1]
    assert soc1.constants["NANDLAB_DIE_TIME_SCALE"] == 1
    # A board SoC has no place for them.
    with pytest.raises(ValueError, match="NAND storage 'sim' is for the simulation target"):
        from nandlab.soc.nandlab_soc import NandLabSoC
        NandLabSoC.connect_nand_storage(soc, 0, None)


def test_cli_checks_nand_options_before_building(tmp_path):
    """Bad NAND options and images are refused in one line before anything is built or started."""
    from nandlab.testing import run_cli
    bad = tmp_path / "bad.img"
    bad.write_bytes(b"not an image")
    for args, reason in ((["sim", "--nand-blocks", "5000"], "5000 blocks: NL-SLC-2K takes 2..2048"),
                         (["sim", "--nand-part", "NOPE"], "unknown part 'NOPE'"),
                         (["sim", "--nand-storage", "bram"], "the limit is 4 MiB"),
                         (["sim", "--nand-image", str(bad)], "is not a nandlab NAND image"),
                         (["sim", "--nand-image", str(tmp_path / "none.img")], "cannot read"),
                         (["sim", "--nand-port", "70000"], "--nand-port 70000 is not a TCP port"),
                         (["sim", "--nand-time-scale", "0"], "--nand-time-scale 0: a whole number, 1"),
                         (["replay", "x", "--format", "synth", "--nand-time-scale", "5000"], "--nand-time-scale 5000"),
                         (["replay", "x", "--format", "synth", "--prep-time-shift", "21"], "--prep-time-shift 21: 0..20"),
                         (["replay", "x", "--format", "synth", "--nand-pages", "65"],
                          "--nand-pages 65: 65 pages per block: NL-SLC-2K takes 1..64"),
                         (["replay", "x", "--format", "synth", "--server", "1234", "--nand-sdw"],
                          "--nand-sdw: a running SoC's dies are what they were built as"),
                         (["nand", "image"], "usage: nandlab nand image save|load FILE"),
                         (["nand", "image", "frob", "x"], "usage: nandlab nand image save|load FILE"),
                         (["nand", "image", "load", str(bad)], "is not a nandlab NAND image"),
                         (["nand", "image", "save", str(tmp_path / "x.img"), "--port", str(free_tcp_port())],
                          "no simulator NAND control port"),
                         (["nand", "image", "save", str(tmp_path / "no" / "x.img")], "is not a directory")):
        out = run_cli(*args, timeout=120)
        assert out.returncode == 2 and reason in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr and "generating" not in out.stderr, (args, out.stderr)
