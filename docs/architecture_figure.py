"""Draws docs/architecture.png, the data flow of one request through nandlab's rooms.

    .venv/bin/python docs/architecture_figure.py
"""

from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

HERE = Path(__file__).resolve().parent

# (label, room, x, y): boxes on a 12 x 7 grid; the room names the directory that holds the concept.
BOXES = {
    "host":  ("host tools\nnandlab CLI, monitor, plots", "sw/host/nandlab", 1.6, 6.0),
    "fw":    ("firmware (VexRiscv)\nshell, ONFI bring-up, DCC", "sw/firmware", 5.6, 6.0),
    "hal":   ("HAL on csr.h", "sw/firmware/hal.c", 9.6, 6.0),
    "queue": ("descriptor queue +\nsequencer (microcode)", "gateware/onfi/controller", 9.6, 4.5),
    "beat":  ("beat engine +\nDIN/DOUT datapath, DMA", "gateware/onfi/controller", 5.6, 4.5),
    "ecc":   ("ECC path (BCH)\nplugs in", "gateware/ecc", 9.6, 3.0),
    "bus":   ("phased NAND bus\n(async / sync / NV-DDR)", "gateware/onfi/common.py", 5.6, 3.0),
    "die":   ("die emulator\ndecoder, registers, array,\noutput, timing checker", "nand_model/die", 5.6, 1.4),
    "ring":  ("token ring node\nper die (MTPM/KMTPM)", "gateware/power", 9.6, 1.4),
    "mon":   ("current monitor\n(violations per 40 ns)", "gateware/power", 1.6, 1.4),
    "tel":   ("telemetry frames", "gateware/telemetry", 1.6, 3.0),
}
# (from, to, label, sideways offset of a pair of opposite arrows).
ARROWS = [
    ("host", "fw", "bridge / console"), ("fw", "hal", ""), ("hal", "queue", "descriptors", -0.6),
    ("queue", "beat", ""), ("beat", "ecc", "data"), ("beat", "bus", ""), ("bus", "die", "ONFI"),
    ("die", "ring", "OI / OE hook"), ("die", "mon", "current"), ("mon", "tel", ""),
    ("tel", "host", "UDP / UART / TCP"), ("queue", "hal", "completions", 0.6),
]


def main():
    fig, ax = plt.subplots(figsize=(12, 7.2))
    ax.set_xlim(0, 11.4)
    ax.set_ylim(0.5, 7.0)
    ax.axis("off")
    w, h = 3.0, 0.95
    for label, room, x, y in BOXES.values():
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                    fc="#eef3fb", ec="#3a5a8c"))
        ax.text(x, y + 0.1, label, ha="center", va="center", fontsize=9)
        ax.text(x, y - h / 2 + 0.08, room, ha="center", va="bottom", fontsize=7.5, family="monospace",
                color="#555555")
    for a, b, text, *shift in ARROWS:
        (_, _, xa, ya), (_, _, xb, yb) = BOXES[a], BOXES[b]
        off = shift[0] if shift else 0.0
        xa, xb = xa + off, xb + off
        dx, dy = xb - xa, yb - ya
        # Leave and enter at the box edges.
        sa = min(w / 2 / abs(dx) if dx else 9, h / 2 / abs(dy) if dy else 9) * 1.1
        ax.annotate("", xy=(xb - dx * sa, yb - dy * sa), xytext=(xa + dx * sa, ya + dy * sa),
                    arrowprops=dict(arrowstyle="->", color="#333333", lw=1.2))
        if text:
            ax.text((xa + xb) / 2 + (0.08 if dx == 0 else 0), (ya + yb) / 2 + (0 if dx == 0 else 0.12), text,
                    ha="left" if dx == 0 else "center", va="center", fontsize=8, color="#8c3a3a")
    ax.set_title("nandlab: data flow of one request, and the room (directory) that holds each concept", fontsize=11)
    fig.tight_layout()
    fig.savefig(HERE / "architecture.png", dpi=110)


if __name__ == "__main__":
    main()
