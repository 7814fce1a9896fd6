"""Pin PHY for real ONFI chips: the controller side of the phased NAND bus onto FPGA pins through DDR I/O.

Pins and phases
===============

Every fast output (WE#/CLK, RE#/W-R#, DQ, DQS) goes through a DDR output register whose first
data input is phase 0 and whose second is phase 1 of the system clock cycle (ODDR on 7-series,
ODDRX1F on ECP5, both through LiteX's `DDROutput`). The whole-cycle outputs (CE#, CLE, ALE, WP#)
go through the same DDR register with the same level on both inputs and the output enables of DQ
and DQS through a register of the same latency, so that all pins move together: the levels the
controller puts on the bus in cycle n are on the pins during cycle n+1 (`output_latency` = 1).

DQ and DQS are sampled twice per cycle by DDR input registers (IDDR / IDDRX1F): at the end of
phase 0 (the falling clock edge) and at the end of phase 1 (the next rising edge). The two
families pair their samples differently (LiteX's 7-series `DDRInput` uses IDDR in SAME_EDGE mode:
the falling sample of a cycle comes out with the rising sample that ends it; ECP5's IDDRX1F gives
a rising sample with the falling one after it), so the PHY realigns them per family; the samples
of pin cycle n reach bus.dq_i / bus.dqs_i in cycle n+2 (`input_latency` = 2). Hence

    read_latency = output_latency + input_latency = 3 cycles:

the bus cycle in which the controller sets a level (RE# low, say) and the bus cycle in which
dq_i shows the pins sampled while that level was on them are `read_latency` apart; the controller
adds it to the chip's own delays (tREA, tDQSRE). While the PHY itself drives DQ (DQS), the
samples of those cycles read as 0 on the bus, as an emulated die that does not drive leaves the
bus; the calibration snapshot keeps them.

R/B# (open drain, one per target; pull-ups on the adaptor) passes a 2-flop synchroniser
(`rb_latency` = 2); a target's R/B# goes to all its LUN bits of bus.rb_n.

Input-delay calibration
=======================

Each DQ bit and DQS passes a programmable delay before its DDR input register: IDELAYE2
(VAR_LOAD, 32 taps of 78 ps with the 200 MHz reference; needs an IDELAYCTRL, which the PHY adds
with `with_idelayctrl` when the SoC has none, clocked by an `idelay` domain) on 7-series, DELAYF
(128 taps, about 25 ps each as Lattice quotes it) on ECP5. A lane mask selects which of the nine
lanes (DQ0-7, DQS = lane 8) a command moves: `load` sets the taps to `value` (7-series) or back
to 0 (ECP5, whose DELAYF only resets), `inc`/`dec` move one tap. The PHY keeps a copy of every lane's
tap count (7-series wraps after 31 as IDELAYE2 does; ECP5 stops at 0 and 127 as DELAYF does).

The snapshot register holds the last raw DDR samples (DQ and DQS of both phases): live every
cycle, or frozen at the first change of DQS after `arm` (the first byte of an NV-DDR burst).

Read training (firmware, with the bit-bang master or the controller):

1. Put the chip in a state where it outputs a known pattern: READ PARAMETER PAGE (ECh) and
   read the signature "ONFI" (4Fh 4Eh 46h 49h), or READ ID 20h.
2. Select all lanes, `load` 0.
3. For each tap step: re-issue the read, clock the pattern bytes out and compare each snapshot
   (both phases) with the expected bytes bit by bit; record, per lane, pass/fail at this tap.
   Then `inc` all lanes.
4. Per lane, the passing taps form a window; set the lane to the window's middle (`load`
   value on 7-series; `load` then `inc` steps on ECP5). A lane without a window means the
   sample point is a whole phase off: in async SDR hold RE# low one phase longer; in NV-DDR
   pick the other phase of the DQS edge.
5. Keep the result per chip and timing mode; redo it when the timing mode changes.

Simulation
==========

LiteX's DDR primitives have no simulation lowering. With `sim=True` the PHY uses behavioural
models of the primitives of `family` (same register pairing as the hardware cells) on a pad
record from `sim_pads()`, where each bidirectional pin is split into output, output enable and
input; the models need a `sys_fall` clock domain ticking on the falling edge of `sys` (in
`run_simulation`: clocks={"sys": 10, "sys_fall": (10, 5)}). These pads have no delay elements:
a pin is what the chip drives, sampled at the clock edges.

`sim_pads(phased=True)` gives the pin-level form that the pin die model
(nandlab.nand_model.pinmodel) uses: every output pin is given as its levels in the two halves of
the pin cycle (WE#, RE#, DQ, DQS: 2 levels; CE#, CLE, ALE, WP#: 1), which is all a DDR output
register can put on a pin, and DQ/DQS come back as `dq_s`/`dqs_s`: the level each DDR input
register samples at the end of phase 0 and at the end of phase 1 of the cycle, after the
lane's delay line. The model computes those samples from the chip's output timings, the lane's
skew and the taps this PHY's delay controls hold (`dly_taps`, `DELAY_TAP_PS` each), so that the
calibration registers move the sample point in simulation as on the board; no `sys_fall` domain
is needed. The primitive path (ODDR/IDDR/IOBUF/IDELAYE2, ODDRX1F/IDDRX1F/TRELLIS_IO/DELAYF) is
checked by synthesis with yosys instead.
"""

from migen import *
from migen.fhdl.specials import Tristate
from migen.genlib.cdc import MultiReg
from migen.genlib.record import DIR_M_TO_S, DIR_S_TO_M, Record

from litex.build.io import DDRInput, DDROutput, SDROutput
from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRField, CSRStatus, CSRStorage

from nandlab.gateware.onfi.bitbang import NandLabBusBitbang
from nandlab.gateware.onfi.common import NandBus, NandBusMux

FAMILIES = ("xc7", "ecp5")
DQS_LANE = 8
LANES    = 9                     # DQ0-7 and DQS.

# Delay line of each family: taps (IDELAYE2 wraps after its last, DELAYF stops) and the delay of a tap in
# ps (IDELAYE2 with the 200 MHz reference; DELAYF as Lattice quotes it): the simulation model's time base.
DELAY_TAPS   = {"xc7": 32, "ecp5": 128}
DELAY_TAP_PS = {"xc7": 78, "ecp5": 25}

OUTPUT_LATENCY = 1
INPUT_LATENCY  = 2
RB_LATENCY     = 2
DQS_OUT_SHIFT_CYCLES = 0.25   # DQS output a quarter cycle late (the `sys90` clock on hardware; modelled in simulation).


def family_of(platform):
    """The pin PHY family of a LiteX platform ("xc7", "ecp5")."""
    device = platform.device.lower()
    if device.startswith("xc7"):
        return "xc7"
    if device.startswith("lfe5"):
        return "ecp5"
    raise ValueError(f"no NAND pin PHY for device '{platform.device}' (families: {', '.join(FAMILIES)})")


def sim_pads(targets=1, phased=False):
    """Pad record for `sim=True`: outputs as on the board, bidirectional pins split into _o/_oe/_i.
    `phased`: the pin-level form of the pin die model (see the module documentation)."""
    if phased:
        return Record([
            ("ce_n",   targets, DIR_M_TO_S),
            ("cle",    1,       DIR_M_TO_S),
            ("ale",    1,       DIR_M_TO_S),
            ("we_n",   2,       DIR_M_TO_S),     # Phase 0 in bit 0.
            ("re_n",   2,       DIR_M_TO_S),
            ("wp_n",   1,       DIR_M_TO_S),
            ("dq_o",   16,      DIR_M_TO_S),     # Phase 0 in bits 7:0.
            ("dq_oe",  1,       DIR_M_TO_S),
            ("dqs_o",  2,       DIR_M_TO_S),
            ("dqs_oe", 1,       DIR_M_TO_S),
            ("dq_s",   16,      DIR_S_TO_M),     # Sampled at the end of phase 0 in bits 7:0, of phase 1 in 15:8.
            ("dqs_s",  2,       DIR_S_TO_M),
            ("rb_n",   targets, DIR_S_TO_M),
        ])
    return Record([
        ("ce_n",   targets, DIR_M_TO_S),
        ("cle",    1,       DIR_M_TO_S),
        ("ale",    1,       DIR_M_TO_S),
        ("we_n",   1,       DIR_M_TO_S),
        ("re_n",   1,       DIR_M_TO_S),
        ("wp_n",   1,       DIR_M_TO_S),
        ("dq_o",   8,       DIR_M_TO_S),
        ("dq_oe",  1,       DIR_M_TO_S),
        ("dq_i",   8,       DIR_S_TO_M),
        ("dqs_o",  1,       DIR_M_TO_S),
        ("dqs_oe", 1,       DIR_M_TO_S),
        ("dqs_i",  1,       DIR_S_TO_M),
        ("rb_n",   targets, DIR_S_TO_M),
    ])


# Behavioural models of the primitives (sim=True) --------------------------------------------------

class _SimDDROutput(Module):
    """ODDR (SAME_EDGE) / ODDRX1F: both inputs registered at the rising edge, i1 out while the clock
    is high (phase 0), i2 while it is low (phase 1)."""
    def __init__(self, i1, i2, o):
        q1, q2 = Signal(), Signal()
        self.sync += q1.eq(i1), q2.eq(i2)
        self.comb += o.eq(Mux(ClockSignal("sys"), q1, q2))


class _SimPhasedDDROutput(Module):
    """ODDR / ODDRX1F onto a phased pin (sim_pads(phased=True)): the levels of both halves of the pin
    cycle, registered at the rising edge (a whole-cycle pin: the first)."""
    def __init__(self, i1, i2, o):
        self.sync += o.eq(Cat(i1, i2) if len(o) == 2 else i1)


class _SimDDRInput(Module):
    """IDDR in SAME_EDGE mode (xc7): o1 = sample at this rising edge, o2 = sample at the falling edge
    before it. IDDRX1F (ecp5): o1 = sample at the previous rising edge, o2 = the falling one after it.
    `s0`: the pin is given as its samples (sim_pads(phased=True)): `i` the one at the end of phase 1 of
    this cycle (the next rising edge), `s0` the one at its falling edge."""
    def __init__(self, i, o1, o2, family, s0=None):
        fall, rise = Signal(), Signal()
        if s0 is None:
            self.sync.sys_fall += fall.eq(i)
        else:
            self.comb += fall.eq(s0)
        if family == "xc7":
            self.sync += o1.eq(i), o2.eq(fall)
        else:
            self.sync += rise.eq(i), o1.eq(rise), o2.eq(fall)


# The PHY ------------------------------------------------------------------------------------------

class NandLabPinPHY(LiteXModule):
    """Phased NAND bus (controller side) to ONFI pins; see the module documentation.

    pads: ce_n (one per target), cle, ale, we_n, re_n, dq[8], dqs, rb_n (one per target) and
    optionally wp_n (an adaptor may strap WP#). family: "xc7" or "ecp5". with_delay: input delay
    lines for calibration. with_idelayctrl (xc7): instantiate an IDELAYCTRL clocked by the `idelay`
    domain (leave it off when the SoC already has one, as the Arty's DDR3 clocking does).
    """
    def __init__(self, pads, bus, family="xc7", sim=False, with_delay=True, with_idelayctrl=False, dqs_domain=None):
        if family not in FAMILIES:
            raise ValueError(f"pin PHY family '{family}' unknown; valid: {', '.join(FAMILIES)}")
        targets = len(bus.ce_n)
        if len(pads.ce_n) != targets or len(pads.rb_n) != targets:
            raise ValueError(f"pads have {len(pads.ce_n)} CE# and {len(pads.rb_n)} R/B# for {targets} targets")
        with_idelayctrl     = with_idelayctrl and with_delay and family == "xc7" and not sim
        self.family         = family
        self.sim            = sim
        self.with_delay     = with_delay
        self.output_latency = OUTPUT_LATENCY
        self.input_latency  = INPUT_LATENCY
        self.read_latency   = OUTPUT_LATENCY + INPUT_LATENCY
        self.rb_latency     = RB_LATENCY
        self.delay_taps     = DELAY_TAPS[family]
        self.delay_tap_ps   = DELAY_TAP_PS[family]
        # DQS leaves a quarter cycle after the phase it belongs to (NV-DDR data input: its edges then fall
        # half a phase into the data; controller.common.din_dqs_phases places them): on hardware its output
        # register is clocked by `dqs_domain`, the sys clock shifted by 90 degrees (add_nand_socket makes
        # `sys90`); in simulation the pin model applies the shift. Without it DQS is edge-aligned (0).
        self.dqs_domain = dqs_domain
        self.dqs_out_shift_cycles = DQS_OUT_SHIFT_CYCLES if (sim or dqs_domain) else 0
        phased = sim and hasattr(pads, "dq_s")
        tap_bits = bits_for(self.delay_taps - 1)

        # Calibration controls (CSRs in add_csr()).
        self.dly_sel   = Signal(LANES)          # Lanes the next command moves (DQS = bit 8).
        self.dly_value = Signal(tap_bits)       # Taps for `load` (xc7).
        self.dly_load  = Signal()               # Pulses.
        self.dly_inc   = Signal()
        self.dly_dec   = Signal()
        self.dly_taps  = [Signal(tap_bits, name=f"dly_taps{i}") for i in range(LANES)]
        self.snap_arm  = Signal()               # Pulse.
        self.snap_mode = Signal()               # 0: live, 1: freeze at the first DQS change after arm.
        self.snap_dq   = Signal(16)             # Phase 0 in bits 7:0, as on the bus.
        self.snap_dqs  = Signal(2)
        self.snap_done = Signal()
        self.idelay_ready = Signal(reset=int(not with_idelayctrl))

        # # #

        # Outputs: every pin behind a DDR register so that all have the same latency.
        def ddr_out(i1, i2, o):
            if phased:
                self.submodules += _SimPhasedDDROutput(i1, i2, o)
            elif sim:
                self.submodules += _SimDDROutput(i1, i2, o)
            else:
                self.specials += DDROutput(i1, i2, o)

        for i in range(targets):
            ddr_out(bus.ce_n[i], bus.ce_n[i], pads.ce_n[i])
        ddr_out(bus.cle,     bus.cle,     pads.cle)
        ddr_out(bus.ale,     bus.ale,     pads.ale)
        ddr_out(bus.we_n[0], bus.we_n[1], pads.we_n)
        ddr_out(bus.re_n[0], bus.re_n[1], pads.re_n)
        if hasattr(pads, "wp_n"):
            ddr_out(bus.wp_n, bus.wp_n, pads.wp_n)

        # Bidirectional DQ/DQS: raw DDR samples (o1, o2 of each input register) per lane.
        raw1 = Signal(LANES)
        raw2 = Signal(LANES)
        lanes = [(bus.dq_o[b], bus.dq_o[8 + b], bus.dq_oe, "dq", b) for b in range(8)]
        lanes.append((bus.dqs_o[0], bus.dqs_o[1], bus.dqs_oe, "dqs", None))
        for lane, (o1, o2, oe, name, bit) in enumerate(lanes):
            if phased:
                width = 8 if bit is not None else 1
                pin_o, pin_s = getattr(pads, name + "_o"), getattr(pads, name + "_s")
                b = bit or 0
                self.sync += pin_o[b].eq(o1), pin_o[width + b].eq(o2)
                if bit in (None, 0):
                    self.sync += getattr(pads, name + "_oe").eq(oe)
                self.submodules += _SimDDRInput(pin_s[width + b], raw1[lane], raw2[lane], family, s0=pin_s[b])
            elif sim:
                pin_o  = getattr(pads, name + "_o")
                pin_oe = getattr(pads, name + "_oe")
                pin_i  = getattr(pads, name + "_i")
                if bit is not None:
                    pin_o, pin_i = pin_o[bit], pin_i[bit]
                ddr_out(o1, o2, pin_o)
                if bit in (None, 0):    # One enable per pin group.
                    self.sync += pin_oe.eq(oe)
                self.submodules += _SimDDRInput(pin_i, raw1[lane], raw2[lane], family)
            else:
                pad = getattr(pads, name)
                self._pin_io(pad[bit] if bit is not None else pad, o1, o2, oe, raw1[lane], raw2[lane],
                             lane, tap_bits)

        # Realign the family's sample pairs to (phase 0, phase 1) of one pin cycle, one cycle after
        # the input register (see the module documentation).
        ph0, ph1 = Signal(LANES), Signal(LANES)
        if family == "xc7":
            self.sync += ph0.eq(raw2), ph1.eq(raw1)
        else:
            self.sync += ph0.eq(raw2)
            self.comb += ph1.eq(raw1)

        # To the bus, with the cycles the PHY drove itself masked.
        dq_oe_d  = Signal(self.read_latency)
        dqs_oe_d = Signal(self.read_latency)
        self.sync += [
            dq_oe_d.eq(Cat(bus.dq_oe, dq_oe_d)),
            dqs_oe_d.eq(Cat(bus.dqs_oe, dqs_oe_d)),
        ]
        own_dq, own_dqs = dq_oe_d[-1], dqs_oe_d[-1]
        self.comb += [
            bus.dq_i.eq(Mux(own_dq, 0, Cat(ph0[:8], ph1[:8]))),
            bus.dqs_i.eq(Mux(own_dqs, 0, Cat(ph0[DQS_LANE], ph1[DQS_LANE]))),
        ]

        # R/B#: asynchronous, open drain.
        rb = Signal(targets)
        self.specials += MultiReg(pads.rb_n, rb)
        luns = len(bus.rb_n) // targets
        self.comb += bus.rb_n.eq(Cat(*[Replicate(rb[t], luns) for t in range(targets)]))

        # Calibration: tap shadows and the snapshot.
        for lane, taps in enumerate(self.dly_taps):
            sel = self.dly_sel[lane]
            top = self.delay_taps - 1
            if family == "xc7":
                load_value, inc, dec = self.dly_value, taps + 1, taps - 1    # Wraps as IDELAYE2.
            else:
                load_value = 0
                inc = Mux(taps == top, taps, taps + 1)                        # Stops as DELAYF.
                dec = Mux(taps == 0, taps, taps - 1)
            self.sync += If(sel,
                If(self.dly_load, taps.eq(load_value)
                ).Elif(self.dly_inc, taps.eq(inc)
                ).Elif(self.dly_dec, taps.eq(dec)))

        dqs_prev = Signal()
        armed = Signal()
        dqs_change = (ph0[DQS_LANE] != dqs_prev) | (ph1[DQS_LANE] != ph0[DQS_LANE])
        self.sync += [
            dqs_prev.eq(ph1[DQS_LANE]),
            If(self.snap_arm,
                armed.eq(1), self.snap_done.eq(0)
            ).Elif((self.snap_mode == 0) | (armed & dqs_change),
                self.snap_dq.eq(Cat(ph0[:8], ph1[:8])),
                self.snap_dqs.eq(Cat(ph0[DQS_LANE], ph1[DQS_LANE])),
                If(self.snap_mode, armed.eq(0), self.snap_done.eq(1)),
            ),
        ]

        if with_idelayctrl:
            self._add_idelayctrl()

    def _pin_io(self, pad, o1, o2, oe, i1, i2, lane, tap_bits):
        """One bidirectional pin: DDR output, registered enable, buffer, delay line, DDR input."""
        o, t, i, i_dly = Signal(), Signal(), Signal(), Signal()
        if lane == DQS_LANE and self.dqs_domain:
            # Registered a quarter cycle later than the others (the path into it: a quarter cycle).
            self.specials += DDROutput(o1, o2, o, clk=ClockSignal(self.dqs_domain))
        else:
            self.specials += DDROutput(o1, o2, o)
        if self.family == "xc7":
            self.specials += SDROutput(~oe, t)       # Same latency as the DDR data register.
            self.specials += Instance("IOBUF", io_IO=pad, i_I=o, i_T=t, o_O=i)
        else:
            oe_r = Signal()
            self.sync += oe_r.eq(oe)                  # Fabric register: one cycle, as ODDRX1F.
            self.specials += Tristate(pad, o, oe_r, i)
        if not self.with_delay:
            self.comb += i_dly.eq(i)
        elif self.family == "xc7":
            self.specials += Instance("IDELAYE2",
                p_IDELAY_TYPE           = "VAR_LOAD",
                p_DELAY_SRC             = "IDATAIN",
                p_IDELAY_VALUE          = 0,
                p_HIGH_PERFORMANCE_MODE = "TRUE",
                p_REFCLK_FREQUENCY      = 200.0,
                p_SIGNAL_PATTERN        = "DATA",
                p_CINVCTRL_SEL          = "FALSE",
                p_PIPE_SEL              = "FALSE",
                i_C           = ClockSignal("sys"),
                i_REGRST      = 0,
                i_LD          = self.dly_sel[lane] & self.dly_load,
                i_CE          = self.dly_sel[lane] & (self.dly_inc | self.dly_dec),
                i_INC         = self.dly_inc,
                i_CINVCTRL    = 0,
                i_CNTVALUEIN  = self.dly_value,
                i_LDPIPEEN    = 0,
                i_DATAIN      = 0,
                i_IDATAIN     = i,
                o_DATAOUT     = i_dly,
            )
        else:
            # DELAYF moves one tap per MOVE pulse; LOADN low returns it to DEL_VALUE (0).
            loadn, move, direction = Signal(reset=1), Signal(), Signal()
            self.sync += [
                loadn.eq(~(self.dly_sel[lane] & self.dly_load)),
                move.eq(self.dly_sel[lane] & (self.dly_inc | self.dly_dec)),
                If(self.dly_inc | self.dly_dec, direction.eq(self.dly_dec)),   # 0: more delay.
            ]
            self.specials += Instance("DELAYF",
                p_DEL_MODE  = "USER_DEFINED",
                p_DEL_VALUE = 0,
                i_A         = i,
                i_LOADN     = loadn,
                i_MOVE      = move,
                i_DIRECTION = direction,
                o_Z         = i_dly,
            )
        self.specials += DDRInput(i_dly, i1, i2)

    def _add_idelayctrl(self):
        """IDELAYCTRL on the 200 MHz `idelay` domain, held in reset for its first 16 cycles."""
        count = Signal(4, reset=15)
        rst = Signal(reset=1)
        self.sync.idelay += If(count != 0, count.eq(count - 1)).Else(rst.eq(0))
        rdy = Signal()
        self.specials += Instance("IDELAYCTRL", i_REFCLK=ClockSignal("idelay"), i_RST=rst, o_RDY=rdy)
        self.specials += MultiReg(rdy, self.idelay_ready)

    def add_csr(self):
        tap_bits = len(self.dly_value)
        self._dly_sel = CSRStorage(LANES, reset=2**LANES - 1,
            description="Delay lanes the next `dly_ctl` command moves: bit i = DQi, bit 8 = DQS.")
        self._dly_ctl = CSRStorage(fields=[
            CSRField("load",  size=1, pulse=True,
                description="Set the selected lanes to `value` taps (7-series) or back to 0 (ECP5)."),
            CSRField("inc",   size=1, pulse=True, description="One tap more delay on the selected lanes."),
            CSRField("dec",   size=1, pulse=True, description="One tap less delay on the selected lanes."),
            CSRField("value", size=tap_bits, offset=8, description="Taps for `load` (7-series only)."),
        ], description="Input delay command (takes effect on write).")
        self._dly_taps = CSRStatus(LANES * tap_bits,
            description=f"Tap count of every lane, {tap_bits} bits each (lane 0 = DQ0 in the low bits, lane 8 = DQS); "
                        f"{self.delay_taps} taps per line.")
        self._snap_ctl = CSRStorage(fields=[
            CSRField("mode", size=1, values=[
                ("0", "live", "The snapshot follows the samples every cycle."),
                ("1", "dqs",  "The snapshot freezes at the first DQS change after `arm`."),
            ], description="Snapshot mode."),
            CSRField("arm", size=1, offset=1, pulse=True, description="Wait for the next DQS change (mode dqs)."),
        ], description="Capture snapshot control.")
        self._snap = CSRStatus(fields=[
            CSRField("dq0",  size=8,  description="DQ sampled at the end of phase 0."),
            CSRField("dq1",  size=8,  description="DQ sampled at the end of phase 1."),
            CSRField("dqs0", size=1,  description="DQS at the end of phase 0."),
            CSRField("dqs1", size=1,  description="DQS at the end of phase 1."),
            CSRField("done", size=1, offset=24, description="Mode dqs: frozen since the last `arm`."),
            CSRField("idelay_ready", size=1, offset=25,
                description="7-series IDELAYCTRL of this PHY is ready (1 when it has none)."),
        ], description="Last raw DDR samples of DQ and DQS (for read training).")
        f = self._dly_ctl.fields
        self.comb += [
            self.dly_sel.eq(self._dly_sel.storage),
            self.dly_value.eq(f.value),
            self.dly_load.eq(f.load),
            self.dly_inc.eq(f.inc),
            self.dly_dec.eq(f.dec),
            self._dly_taps.status.eq(Cat(*self.dly_taps)),
            self.snap_mode.eq(self._snap_ctl.fields.mode),
            self.snap_arm.eq(self._snap_ctl.fields.arm),
            self._snap.fields.dq0.eq(self.snap_dq[:8]),
            self._snap.fields.dq1.eq(self.snap_dq[8:]),
            self._snap.fields.dqs0.eq(self.snap_dqs[0]),
            self._snap.fields.dqs1.eq(self.snap_dqs[1]),
            self._snap.fields.done.eq(self.snap_done),
            self._snap.fields.idelay_ready.eq(self.idelay_ready),
        ]


# SoC integration ----------------------------------------------------------------------------------

def socket_part():
    """What the socket's controller assumes of a chip: 2 column and 3 row address cycles (fixed in the
    gateware; the common case, the parameter page says) and ONFI's slowest tADL / tCCS. Its geometry is
    only the reset value of the controller's CSRs: firmware sets the chip's from the parameter page."""
    from nandlab.nand_model.parts import NandPart
    return NandPart(address_cycles=(2, 3))


def _add_sys90(soc):
    """A `sys90` clock domain (the sys clock, 90 degrees later) from the CRG's PLL, for the PHY's DQS output;
    its name, or None when the CRG has no PLL to take one more output from (DQS then edge-aligned)."""
    crg = getattr(soc, "crg", None)
    pll = getattr(crg, "pll", None)
    if pll is None or not hasattr(pll, "create_clkout"):
        return None
    if not hasattr(crg, "cd_sys90"):
        crg.cd_sys90 = ClockDomain("sys90")
        pll.create_clkout(crg.cd_sys90, soc.sys_clk_freq, phase=90)
    return "sys90"


def add_nand_socket(soc, pads, targets=None, name="nand_socket", with_delay=None, with_controller=True,
    part=None):
    """A NAND socket on `soc`: its own phased bus (`soc.nand_socket_bus`) and the pin PHY
    (`<name>_phy`) to `pads`; a bit-bang master (`<name>_bitbang`) and, `with_controller`, a channel
    controller (`<name>_ctrl`, added by `soc.add_nand_controller`: DMA master, interrupt) share the
    bus through a mux (`<name>_mux_select`: 0 bit-bang, the default, 1 controller). CSRs and
    constants for all of them. `part` is what the controller assumes of the chip (`socket_part()`).

    The controller drives what the PHY carries (per-phase WE#/RE#, DQ and DQS, whole-cycle CE#/CLE/ALE)
    and is built with the PHY's `read_latency`: it takes each byte from bus.dq_i that many cycles after
    the strobe that asked for it (the controller's "Read latency"), in every interface and mode; and
    with the PHY's output latency plus its R/B# synchroniser as `rb_latency`: it samples R/B# that
    much later than tWB max after a confirm.

    `pads` is a requested pad record, or a LiteX IO list (such as `arty_nand_socket_io()`) that is
    added to the platform and requested as resource `nand_socket`. `targets` defaults to the
    number of CE# pins. On 7-series the delay lines need an `idelay` clock domain in the CRG
    (an IDELAYCTRL is added unless the CRG has one); without it they are left out.
    """
    platform = soc.platform
    if isinstance(pads, list):
        platform.add_extension(pads)
        pads = platform.request(pads[0][0])
    targets = targets or len(pads.ce_n)
    family = family_of(platform)
    crg = getattr(soc, "crg", None)
    has_idelay = hasattr(crg, "cd_idelay")
    if with_delay is None:
        with_delay = family == "ecp5" or has_idelay
    with_idelayctrl = family == "xc7" and with_delay and not hasattr(crg, "idelayctrl")

    bus = NandBus(targets=targets, luns=1, name=name + "_bus")
    soc.nand_socket_bus = bus
    dqs_domain = _add_sys90(soc)
    phy = NandLabPinPHY(pads, bus, family=family, with_delay=with_delay, with_idelayctrl=with_idelayctrl,
                        dqs_domain=dqs_domain)
    if with_controller:
        bitbang_bus, ctrl_bus = NandBus(targets=targets, luns=1), NandBus(targets=targets, luns=1)
    else:
        bitbang_bus = bus
    bitbang = NandLabBusBitbang(bitbang_bus)
    soc.add_module(name=f"{name}_bitbang", module=bitbang)
    if with_controller:
        soc.add_nand_controller(ctrl_bus, part or socket_part(), name=f"{name}_ctrl", read_latency=phy.read_latency,
                                rb_latency=phy.output_latency + phy.rb_latency)
        mux = NandBusMux([bitbang_bus, ctrl_bus], bus)
        mux.add_csr(["bit-bang", "controller"])
        soc.add_module(name=f"{name}_mux", module=mux)
    phy.add_csr()
    soc.add_module(name=f"{name}_phy", module=phy)
    prefix = "NANDLAB_" + name.upper()
    soc.add_constant(prefix + "_TARGETS", targets)
    soc.add_constant(prefix + "_READ_LATENCY", phy.read_latency)
    soc.add_constant(prefix + "_RB_LATENCY", phy.rb_latency)
    soc.add_constant(prefix + "_DELAY_TAPS", phy.delay_taps if with_delay else 0)
    soc.add_constant(prefix + "_DELAY_TAP_PS", phy.delay_tap_ps)
    soc.add_constant(prefix + "_DQS_SHIFT_PS", int(round(phy.dqs_out_shift_cycles * 1e12 / soc.sys_clk_freq)))
    soc.add_constant(prefix + "_FAMILY_" + family.upper())
    return phy
