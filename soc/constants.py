"""The constants the firmware (generated soc.h) and the host (csr.csv, csr.json) take from Python.

DESIGN.md decision 10: power policies, the ring's refusal reasons, the controller's operations and
result codes, ONFI opcodes and parameter-page offsets are defined once, in the gateware and die
model modules; `add_constants` exports all of them in one place, whatever cores a SoC has (the
firmware asks the HAL which cores are present). CSR field layouts need nothing here: LiteX writes
csr.h's CSR_<REG>_<FIELD>_OFFSET/_SIZE from the cores' CSRFields.

A list goes out as one string of its names joined by LIST_SEPARATOR (exported too): csr.csv has
no quoting, so a name holds no comma.
"""

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller import OPS as CTRL_OPS, RESULTS as CTRL_RESULTS
from nandlab.gateware.onfi.controller.common import ECC_SUMMARY as CTRL_ECC_SUMMARY
from nandlab.gateware.power import common as power
from nandlab.nand_model import param_page
from nandlab.nand_model.current import I_FRAC_BITS
from nandlab.nand_model import common as die_common
from nandlab.nand_model.die.core import CONTROL_ARCH, CONTROL_MPNFM, CONTROL_TIME_SHIFT

LIST_SEPARATOR = ";"


def name_list(names):
    """One string constant of `names` (indexable from C and from the host's csr.csv)."""
    for name in names:
        if LIST_SEPARATOR in name or "," in name or '"' in name:
            raise ValueError(f"'{name}' cannot go into a generated list constant")
    return LIST_SEPARATOR.join(names)


def power_constants():
    return {
        "NANDLAB_POWER_POLICIES"      : name_list(power.POLICIES),
        "NANDLAB_POWER_RING_ERRORS"   : name_list(power.RING_ERRORS),
        "NANDLAB_POWER_ERR_RT"        : power.ERR_RT,     # (with exchange also: an RT above a ring's home share)
        "NANDLAB_POWER_FAULT_KINDS"   : name_list(power.FAULT_KINDS),
        "NANDLAB_POWER_FAULT_CAUSES"  : name_list(power.FAULT_CAUSES),
        "NANDLAB_POWER_TG_MIN"        : power.TG_RANGE[0],
        "NANDLAB_POWER_TG_MAX"        : power.TG_RANGE[1],
        "NANDLAB_POWER_ALPHA_MIN"     : power.ALPHA_RANGE[0],
        "NANDLAB_POWER_ALPHA_MAX"     : power.ALPHA_RANGE[1],
        "NANDLAB_POWER_DEFAULT_TG"    : power.DEFAULT_TG,
        "NANDLAB_POWER_DEFAULT_ALPHA" : power.DEFAULT_ALPHA,
        "NANDLAB_POWER_STOPPED_ALPHA" : power.STOPPED_ALPHA,
        "NANDLAB_CURRENT_FRAC_BITS"   : I_FRAC_BITS,      # Currents and budgets in I_max / 2^bits.
    }


def controller_constants():
    c = {f"NANDLAB_CTRL_OP_{op}": code for op, code in CTRL_OPS.items()}
    c.update({f"NANDLAB_CTRL_RESULT_{res}": code for code, res in enumerate(CTRL_RESULTS)})
    c["NANDLAB_CTRL_RESULTS"] = name_list(CTRL_RESULTS)
    # The fields of a completion's ECC summary (SoCs whose NANDLAB_CTRL_ECC_SUMMARY is 1).
    offset = 0
    for name, width, _ in CTRL_ECC_SUMMARY:
        c[f"NANDLAB_CTRL_ECC_SUMMARY_{name.upper()}_OFFSET"] = offset
        c[f"NANDLAB_CTRL_ECC_SUMMARY_{name.upper()}_SIZE"] = width
        offset += width
    return c


def onfi_constants():
    c = {f"NANDLAB_ONFI_{name}": value for name, value in vars(onfi).items()
         if name.startswith(("CMD_", "STATUS_", "READ_ID_", "IF_", "T_")) and isinstance(value, int)}
    c["NANDLAB_ONFI_FEATURE_TIMING_MODE"] = onfi.FEATURE_TIMING_MODE
    for field in ("MODE", "INTERFACE"):
        offset, size = getattr(onfi, f"TIMING_MODE_P1_{field}")
        c[f"NANDLAB_ONFI_TIMING_MODE_P1_{field}_OFFSET"] = offset
        c[f"NANDLAB_ONFI_TIMING_MODE_P1_{field}_SIZE"] = size
    c["NANDLAB_ONFI_INTERFACES"] = name_list([onfi.INTERFACE_NAMES.get(i, "")
                                              for i in range(max(onfi.INTERFACE_NAMES) + 1)])
    c["NANDLAB_ONFI_TIMING_MODES"] = len(onfi.SDR_TWC_NS)      # Modes 0..5 of each interface.
    c["NANDLAB_ONFI_SDR0_TWC_NS"] = onfi.SDR_TWC_NS[0]
    c["NANDLAB_ONFI_SDR0_TRC_NS"] = onfi.SDR_TRC_NS[0]
    # SDR mode 0's interface timings (the bit-bang master's waits: every chip powers up in that mode).
    for name, value in onfi.SDR_TIMINGS[0]._asdict().items():
        c[f"NANDLAB_ONFI_SDR0_{name.upper()}_NS"] = value
    # The parameter page: size, CRC, signatures and the offsets of the fields in use.
    c["NANDLAB_ONFI_PARAM_PAGE_BYTES"] = param_page.PAGE_SIZE
    c["NANDLAB_ONFI_PARAM_CRC_INIT"]   = param_page.CRC_INIT
    c["NANDLAB_ONFI_PARAM_CRC_POLY"]   = param_page.CRC_POLY
    c["NANDLAB_ONFI_SIGNATURE"]        = param_page.SIGNATURE.decode()
    c["NANDLAB_ONFI_MPNFM_SIGNATURE"]  = param_page.MPNFM_SIGNATURE.decode()
    for f in param_page.LAYOUT:
        if not f.name.startswith(("reserved", "obsolete")):
            c[f"NANDLAB_ONFI_PARAM_{f.name.upper()}"] = f.offset
    return c


def die_constants():
    """The emulated dies' plane architectures (the `arch` field of nand_die<i>_control, by index) and
    the subplanes per plane of an SDW-NFM die."""
    archs = die_common.ARCH_NAMES
    return {"NANDLAB_DIE_ARCHS": name_list([archs[i] for i in range(len(archs))]),
            "NANDLAB_DIE_SUBPLANES": die_common.SUBPLANES,
            # The fields of nand_die<i>_control (csr.h has them too, but only where the SoC has dies).
            "NANDLAB_DIE_CONTROL_ARCH_OFFSET": CONTROL_ARCH[0], "NANDLAB_DIE_CONTROL_ARCH_SIZE": CONTROL_ARCH[1],
            "NANDLAB_DIE_CONTROL_MPNFM_OFFSET": CONTROL_MPNFM[0],
            "NANDLAB_DIE_CONTROL_TIME_SHIFT_OFFSET": CONTROL_TIME_SHIFT[0],
            "NANDLAB_DIE_CONTROL_TIME_SHIFT_SIZE": CONTROL_TIME_SHIFT[1]}


def constants():
    """{NAME: value} of every exported constant, in export order."""
    return {"NANDLAB_LIST_SEPARATOR": LIST_SEPARATOR, **power_constants(), **controller_constants(),
            **onfi_constants(), **die_constants()}


def add_constants(soc):
    """Export every constant of `constants()` through `soc.add_constant` (soc.h, csr.csv, csr.json)."""
    for name, value in constants().items():
        soc.add_constant(name, value)
