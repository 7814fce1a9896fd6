"""The multi-plane scheduler (sw/firmware/sched.c), built for the host and driven line by line
(sw/firmware/host/sched_cli.c). Judged independently of its code: every group it emits is played on
the reference die (nand_model/reference.py) as the multi-plane sequence it stands for, which must
accept it; a shadow of the queue checks that nothing is lost, duplicated or reordered where NAND
forbids it (a block's programs and erases, and reads against them), and that each group is anchored
by the die's oldest operation."""

import random
import subprocess

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from nandlab import env
from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.common import SUBPLANES
from nandlab.nand_model.parts import DWSDWPaperMLC, NandLabSLC
from nandlab.nand_model.reference import DieConfig, ReferenceDie, ARCH_CNFM, ARCH_DW, ARCH_SDW

pytestmark = pytest.mark.unit

READ, PROGRAM, ERASE, OTHER = 0, 1, 2, 3     # OTHER: a tag or marker read, never grouped
FW = env.REPO / "sw" / "firmware"
OUT = env.BUILD_DIR / "test" / "sched"


@pytest.fixture(scope="module")
def cli():
    OUT.mkdir(parents=True, exist_ok=True)
    exe = OUT / "sched-cli"
    subprocess.run(["cc", "-O1", "-g", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{FW}", "-o", str(exe),
                    str(FW / "host" / "sched_cli.c"), str(FW / "sched.c")], check=True)
    return exe


def run(exe, lines):
    out = subprocess.run([str(exe)], input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                         check=True)
    return out.stdout.splitlines()


def config(mlc, sdw, blocks=16, pages=8, planes=2):
    part = (DWSDWPaperMLC(page_size=2048, spare_size=64, planes=planes) if mlc else NandLabSLC(planes=planes)).scaled(
        blocks_per_lun=blocks, pages_per_block=pages)
    return DieConfig(part, with_sdw=sdw)


def init_line(cfg, dies, arch, depth):
    p = cfg.part
    return (f"init {dies} {p.planes} {p.blocks_per_lun} {p.pages_per_block} {p.bits_per_cell} "
            f"{int(cfg.with_sdw)} {arch} {depth}")


def legal_on_reference_die(cfg, arch, group):
    """Play a group [(kind, block, page)] on a fresh reference die as its multi-plane sequence
    (programs as reads: the die applies one rule to both); True when it refuses nothing."""
    die = ReferenceDie(cfg)
    die.set_arch(arch)
    p = cfg.part
    for k, (kind, block, page) in enumerate(group):
        last = k == len(group) - 1
        row = block << cfg.page_bits | page
        if kind == ERASE:
            die.command(onfi.CMD_ERASE)
            for i in range(p.row_cycles):
                die.address(row >> 8 * i & 0xFF)
            die.command(onfi.CMD_ERASE_CONFIRM if last else onfi.CMD_ERASE_MULTIPLANE)
        else:
            die.command(onfi.CMD_READ)
            for i in range(p.column_cycles):
                die.address(0)
            for i in range(p.row_cycles):
                die.address(row >> 8 * i & 0xFF)
            die.command(onfi.CMD_READ_CONFIRM if last else onfi.CMD_READ_MULTIPLANE)
        die.advance(10**9)
    return not any(die.reasons)


def check_stream(exe, cfg, dies, arch, depth, script, reference_every=1):
    """Run `script` (("push", kind, die, block, page) | ("pick", die, max)) and check every answer
    against the shadow queue and (every `reference_every`-th group) the reference die. Returns the
    groups."""
    lines = [init_line(cfg, dies, arch, depth)]
    ops = {}
    for i, step in enumerate(script):
        if step[0] == "push":
            ops[i] = step[1:]
            lines.append(f"push {step[1]} {step[2]} {step[3]} {step[4]} {i}")
        else:
            lines.append(f"pick {step[1]} {step[2]}")
    # Drain every die at the end.
    lines += [f"pick {d} 8" for d in range(dies) for _ in range(depth)]
    out = run(exe, lines)
    assert out[0] == "ok", out[0]
    queue, groups, taken = [], [], set()
    for step_id, answer in zip(list(range(len(script))) + [None] * (dies * depth), out[1:]):
        if step_id is not None and script[step_id][0] == "push":
            want = "full" if len(queue) >= depth else "ok"
            assert answer == want, (script[step_id], answer, len(queue))
            if answer == "ok":
                queue.append(step_id)
            continue
        ids = [int(x) for x in answer.split()[1:]]
        if not ids:
            continue
        members = [ops[i] for i in ids]
        die = members[0][1]
        mine = [i for i in queue if ops[i][1] == die]
        # The anchor is the die's oldest; every member is of that die, of one kind, queued, once.
        assert ids[0] == mine[0], (ids, mine)
        assert all(m[1] == die and m[0] == members[0][0] for m in members), members
        assert all(i in queue for i in ids) and not taken & set(ids) and len(set(ids)) == len(ids)
        assert len(ids) <= (cfg.registers if arch == ARCH_SDW else cfg.part.planes)
        assert members[0][0] != OTHER or len(ids) == 1, members
        # NAND order: nothing taken passes an older op of its register unless both are reads.
        for i in ids:
            reg = cfg.register_of(ops[i][2] << cfg.page_bits, arch)
            older = [j for j in mine if j < i and cfg.register_of(ops[j][2] << cfg.page_bits, arch) == reg
                     and j not in ids]
            assert all(ops[j][0] == READ and ops[i][0] == READ for j in older), (i, older)
        group = [(ops[i][0], ops[i][2], ops[i][3]) for i in ids]
        if len(groups) % reference_every == 0:
            assert legal_on_reference_die(cfg, arch, group), (arch, group)
        taken |= set(ids)
        queue = [i for i in queue if i not in ids]
        groups.append(group)
    assert not queue, f"left in the queue: {queue}"
    return groups


def script_strategy(cfg, dies):
    p = cfg.part
    push = st.tuples(st.just("push"), st.sampled_from([READ, READ, PROGRAM, PROGRAM, ERASE, OTHER]),
                     st.integers(0, dies - 1), st.integers(0, p.blocks_per_lun - 1), st.integers(0, p.pages_per_block - 1))
    pick = st.tuples(st.just("pick"), st.integers(0, dies - 1), st.integers(1, 8))
    return st.lists(st.one_of(push, push, push, pick), max_size=120)


@pytest.mark.parametrize("mlc, sdw, arch", [(True, True, ARCH_CNFM), (True, True, ARCH_DW), (True, True, ARCH_SDW),
                                            (True, False, ARCH_SDW), (False, False, ARCH_CNFM)])
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_streams_give_legal_groups_in_order(cli, mlc, sdw, arch, data):
    cfg = config(mlc, sdw)
    dies = data.draw(st.integers(1, 3))
    depth = data.draw(st.sampled_from([1, 4, 16, 32]))
    check_stream(cli, cfg, dies, arch, depth, data.draw(script_strategy(cfg, dies)))


@pytest.mark.parametrize("planes, blocks, arch", [(1, 4, ARCH_SDW), (1, 12, ARCH_SDW), (2, 8, ARCH_SDW),
                                                  (2, 12, ARCH_SDW), (2, 20, ARCH_SDW), (2, 40, ARCH_SDW),
                                                  (2, 24, ARCH_DW), (1, 8, ARCH_CNFM)])
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_streams_on_other_geometries(cli, planes, blocks, arch, data):
    """Planes of 4 to 20 blocks (subplanes of one block, of unequal sizes, of five) and one-plane dies:
    the register the scheduler computes (a multiply, not the die's division) is the die's, or the
    reference die refuses a group."""
    cfg = config(True, True, blocks=blocks, planes=planes)
    dies = data.draw(st.integers(1, 2))
    depth = data.draw(st.sampled_from([4, 32]))
    check_stream(cli, cfg, dies, arch, depth, data.draw(script_strategy(cfg, dies)))


@pytest.mark.parametrize("arch, depth", [(ARCH_CNFM, 32), (ARCH_DW, 32), (ARCH_SDW, 256)])
def test_long_streams_wrap_the_arrival_count(cli, arch, depth):
    """More than 65 536 operations through a die: its arrival count (16 bits, of which a summary keeps
    14) wraps while operations wait across it; the anchor is still the die's oldest (the shadow checks
    every group, the reference die one in 64)."""
    cfg = config(True, True)
    rnd = random.Random(1000 * arch + depth)
    p = cfg.part
    script = []
    for _ in range(200_000):
        if rnd.random() < 0.55:
            kind = rnd.choice([READ, READ, PROGRAM, PROGRAM, PROGRAM, ERASE, OTHER])
            script.append(("push", kind, 0, rnd.randrange(p.blocks_per_lun), rnd.randrange(p.pages_per_block)))
        else:
            script.append(("pick", 0, rnd.choice([1, 2, 8, 8, 8])))
    groups = check_stream(cli, cfg, 1, arch, depth, script, reference_every=64)
    assert sum(len(g) for g in groups) > 70_000


def test_pairing_per_architecture(cli):
    """Directed: CNFM pairs only one page address; DW-NFM pairs one page type at any address; SDW-NFM
    fills all 8 subplane registers; depth 1 never pairs; erases pair on distinct registers."""
    mlc = config(True, True)
    reads = lambda pairs: [("push", READ, 0, b, p) for b, p in pairs]
    # Blocks 0 and 1 are planes 0 and 1 of subplane 0; page 2 (LSB) with page 4 (LSB) and page 3 (MSB).
    assert check_stream(cli, mlc, 1, ARCH_CNFM, 32, reads([(0, 2), (1, 4), (1, 2)])) == \
        [[(READ, 0, 2), (READ, 1, 2)], [(READ, 1, 4)]]
    assert check_stream(cli, mlc, 1, ARCH_DW, 32, reads([(0, 2), (1, 3), (1, 4)])) == \
        [[(READ, 0, 2), (READ, 1, 4)], [(READ, 1, 3)]]
    # SDW: one block per subplane (16 blocks: subplane = (block >> 1) * 4 // 8), pages of one type.
    blocks = [0, 1, 4, 5, 8, 9, 12, 13]
    assert [len(g) for g in check_stream(cli, mlc, 1, ARCH_SDW, 32,
                                         [("push", PROGRAM, 0, b, 2 * (k % 4)) for k, b in enumerate(blocks)])] == [8]
    assert [len(g) for g in check_stream(cli, mlc, 1, ARCH_SDW, 1,
                                         [("push", PROGRAM, 0, b, 0) for b in blocks[:1]])] == [1]
    assert [len(g) for g in check_stream(cli, mlc, 1, ARCH_DW, 32, [("push", ERASE, 0, b, 0) for b in (2, 3, 4)])] \
        == [2, 1]
    assert len(blocks) == 2 * SUBPLANES


def test_programs_keep_block_order_and_reads_pass_only_reads(cli):
    """A program behind another program of its register is not taken early, even when its page would
    pair; a read passes older reads of its register but not a program."""
    mlc = config(True, False)
    # Plane 1 holds block 1 page 0 (LSB) then block 3 page 2 (LSB): the anchor block 0 page 2 (CNFM)
    # pairs only with the head (block 1 page 0 has another page): no pair.
    assert check_stream(cli, mlc, 1, ARCH_CNFM, 32, [("push", PROGRAM, 0, 1, 0), ("push", PROGRAM, 0, 0, 2),
                                                     ("push", PROGRAM, 0, 3, 2)]) == \
        [[(PROGRAM, 1, 0)], [(PROGRAM, 0, 2), (PROGRAM, 3, 2)]]
    # Reads: plane 1 has a read of page 5 then page 2; the anchor (plane 0, page 2) takes the second.
    assert check_stream(cli, mlc, 1, ARCH_CNFM, 32, [("push", READ, 0, 0, 2), ("push", READ, 0, 1, 5),
                                                     ("push", READ, 0, 3, 2)])[0] == [(READ, 0, 2), (READ, 3, 2)]
    # ... but not past a program of plane 1.
    assert check_stream(cli, mlc, 1, ARCH_CNFM, 32, [("push", READ, 0, 0, 2), ("push", PROGRAM, 0, 1, 5),
                                                     ("push", READ, 0, 3, 2)])[0] == [(READ, 0, 2)]


def test_refusals(cli):
    """Geometry and depth out of range, an op out of range and a full queue are refused; the
    architecture changes only with an empty queue."""
    out = run(cli, ["init 1 2 16 8 2 1 0 0", "init 1 4 16 8 2 1 0 8", "init 33 2 16 8 2 1 0 8",
                    "init 1 2 4 8 2 1 0 8", "init 1 2 16 8 2 1 0 2", "push 0 1 0 0 1", "push 0 0 16 0 1",
                    "push 0 0 0 8 1", "push 0 0 0 0 1", "push 1 0 1 0 2", "push 0 0 2 0 3", "arch 2",
                    "pick 0 8", "pick 0 8", "arch 2", "stats"])
    assert out == ["error", "error", "error", "error", "ok", "full", "full", "full", "ok", "ok", "full", "error",
                   "group 1", "group 2", "ok", "stats 2 2 2 0 0 0 0 0 0 0"]


def test_cnfm_pairs_whole_page_addresses(cli):
    """CNFM's key holds the page address's 16 bits: pages 0x8002 pair, 0x8002 and 0x0002 do not (a read
    passes the read of page 2 to its partner)."""
    cfg = config(True, True, pages=65536)
    assert check_stream(cli, cfg, 1, ARCH_CNFM, 32, [("push", READ, 0, 0, 0x8002), ("push", READ, 0, 1, 0x0002),
                                                     ("push", READ, 0, 1, 0x8002)]) == \
        [[(READ, 0, 0x8002), (READ, 1, 0x8002)], [(READ, 1, 0x0002)]]
    assert check_stream(cli, cfg, 1, ARCH_CNFM, 32, [("push", PROGRAM, 0, 0, 0x8002),
                                                     ("push", PROGRAM, 0, 1, 0x0002)]) == \
        [[(PROGRAM, 0, 0x8002)], [(PROGRAM, 1, 0x0002)]]


@pytest.mark.parametrize("others, paired", [(8, True), (9, False)])
def test_a_read_passes_at_most_scan_reads(cli, others, paired):
    """A read partner is looked for among the head and the SCHED_READ_SCAN (8) reads behind it: a
    matching read behind 8 others of its plane pairs, behind 9 it does not."""
    cfg = config(True, True)
    script = [("push", READ, 0, 0, 6)] + [("push", READ, 0, 1, k % 6) for k in range(others)] + \
        [("push", READ, 0, 3, 6)]
    groups = check_stream(cli, cfg, 1, ARCH_CNFM, 32, script)
    assert (groups[0] == [(READ, 0, 6), (READ, 3, 6)]) == paired, groups[0]


def test_erases_pair_whatever_their_page_field(cli):
    """An erase's key is its kind alone: erases of two planes pair under CNFM too, whatever page their
    addresses carry."""
    cfg = config(True, True)
    assert check_stream(cli, cfg, 1, ARCH_CNFM, 32, [("push", ERASE, 0, 2, 3), ("push", ERASE, 0, 3, 5)]) == \
        [[(ERASE, 2, 3), (ERASE, 3, 5)]]


def test_max_takes_the_lowest_registers(cli):
    """With room for fewer pages than fit, the anchor goes first and then the lowest registers."""
    cfg = config(True, True)
    # Blocks 13, 0, 1, 4 are registers 7, 0, 4, 1 (plane * 4 + subplane); 13 arrives first (the anchor).
    script = [("push", PROGRAM, 0, b, 0) for b in (13, 0, 1, 4)] + [("pick", 0, 3)]
    assert check_stream(cli, cfg, 1, ARCH_SDW, 32, script)[0] == [(PROGRAM, 13, 0), (PROGRAM, 0, 0), (PROGRAM, 4, 0)]


def test_refuses_planes_of_unequal_blocks(cli):
    """The subplane computation wants as many blocks in each plane."""
    assert run(cli, ["init 1 2 15 8 2 1 2 8", "init 1 2 16 8 2 1 2 8"]) == ["error", "ok"]


def test_the_anchor_is_kept_across_decisions(cli):
    """The die's oldest is kept between decisions (a push to an empty die sets it, a pick that leaves
    heads looks for it again): after a pick leaves an older head, a younger operation on the register
    just emptied does not take the anchor's place."""
    dw = config(True, False)
    # Block 1 (plane 1) page 0 is LSB, block 0 (plane 0) page 1 MSB: no pair under DW-NFM.
    script = [("push", PROGRAM, 0, 1, 0), ("push", PROGRAM, 0, 0, 1), ("pick", 0, 8), ("push", READ, 0, 1, 1),
              ("pick", 0, 8)]
    assert check_stream(cli, dw, 1, ARCH_DW, 32, script) == \
        [[(PROGRAM, 1, 0)], [(PROGRAM, 0, 1)], [(READ, 1, 1)]]


def test_a_lone_operation_with_others_behind_it_stays_alone(cli):
    """A tag read (never grouped) heading a register with more behind it is taken alone, and the
    operation behind it becomes the head."""
    cfg = config(True, True)
    script = [("push", OTHER, 0, 0, 0), ("push", OTHER, 0, 0, 2), ("push", OTHER, 0, 1, 0), ("pick", 0, 8),
              ("pick", 0, 8)]
    assert check_stream(cli, cfg, 1, ARCH_DW, 32, script)[:2] == [[(OTHER, 0, 0)], [(OTHER, 0, 2)]]
