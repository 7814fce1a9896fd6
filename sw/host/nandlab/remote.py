"""The firmware's shell over the host bridge: a command line in, its output and result back.

The firmware (sw/firmware/remote.c) keeps a mailbox in main RAM and polls it while its shell waits
for the console. Through litex_server (`nandlab sim` starts one beside the simulator, `nandlab
server` on a board) the host writes a command line there, bumps the request number, waits for the
firmware's `done` to reach it and reads the output and status back. The console shows the command
and its output as if typed. The mailbox's address is the firmware image's `remote_mailbox` symbol;
its magic word says that the SoC runs that image.

    with RemoteShell.connect(port=1234, build_dir=...) as sh:
        status, output = sh.run("ftl stats")
"""

import struct
import subprocess
import time
from pathlib import Path

from nandlab import env
from nandlab.errors import NandLabError

MAGIC, CMD_MAX, OUT_MAX = 0x626d6c6e, 256, 16384
# Word offsets of struct remote_mailbox (remote.h).
W_MAGIC, W_REQUEST, W_DONE, W_STATUS, W_OUT_LEN, W_OUT_LOST, W_CMD_MAX, W_OUT_MAX = range(8)
CMD_OFFSET, OUT_OFFSET = 32, 32 + CMD_MAX
READ_BURST = 64               # words per bridge read


def mailbox_address(elf):
    """The address of `remote_mailbox` in the firmware image `elf` (NandLabError when it has none)."""
    elf = Path(elf)
    if not elf.exists():
        raise NandLabError(f"firmware image {elf} not found: build the target first (nandlab sim / nandlab build)")
    nm = env.which("riscv64-unknown-elf-nm")
    if nm is None:
        raise NandLabError("riscv64-unknown-elf-nm not found: install gcc-riscv64-unknown-elf (make env does this)")
    out = subprocess.run([nm, str(elf)], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == "remote_mailbox":
            return int(fields[0], 16)
    raise NandLabError(f"{elf} has no remote shell (no remote_mailbox symbol): a firmware older than the bridge shell")


class RemoteShell:
    """The shell of a running SoC through a litex RemoteClient `bus` and the mailbox at `address`."""

    def __init__(self, bus, address):
        self.bus, self.address = bus, address
        magic = self._read(W_MAGIC)
        if magic != MAGIC:
            raise NandLabError(f"no remote shell mailbox at 0x{address:08x} (read 0x{magic:08x}): the SoC runs another "
                               f"firmware than the build's, or it has not booted yet")
        if (self._read(W_CMD_MAX), self._read(W_OUT_MAX)) != (CMD_MAX, OUT_MAX):
            raise NandLabError("the SoC's remote shell mailbox has another layout than this host tool's: "
                               "rebuild the firmware")

    @classmethod
    def connect(cls, port, build_dir, host="localhost"):
        from litex import RemoteClient
        build_dir = Path(build_dir)
        address = mailbox_address(build_dir / "software" / "firmware" / "firmware.elf")
        bus = RemoteClient(host=host, port=port, csr_csv=str(build_dir / "csr.csv"))
        try:
            bus.open()
        except OSError as e:
            raise NandLabError(f"no litex_server at {host}:{port} ({e.strerror or e}): start the SoC with "
                               f"'nandlab sim' (it starts one) or 'nandlab server --target ...'") from None
        try:
            return cls(bus, address)
        except BaseException:
            bus.close()
            raise

    def close(self):
        self.bus.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, word):
        return self.bus.read(self.address + 4 * word)

    def _read_bytes(self, offset, n):
        words = []
        for w in range(0, (n + 3) // 4, READ_BURST):
            count = min(READ_BURST, (n + 3) // 4 - w)
            got = self.bus.read(self.address + offset + 4 * w, length=count)
            words += got if isinstance(got, list) else [got]
        return struct.pack(f"<{len(words)}I", *words)[:n]

    def run(self, line, timeout=600.0, poll_s=0.05):
        """Run `line` on the firmware's shell; returns (status, output). `timeout`: wall-clock seconds."""
        data = line.encode()
        if b"\0" in data or b"\r" in data or b"\n" in data:
            raise NandLabError(f"command {line!r}: one line, without NUL, CR or LF")
        if len(data) >= CMD_MAX:
            raise NandLabError(f"command of {len(data)} bytes: the remote shell takes at most {CMD_MAX - 1}")
        data += b"\0" * (4 - len(data) % 4)
        self.bus.write(self.address + CMD_OFFSET, list(struct.unpack(f"<{len(data) // 4}I", data)))
        request = (self._read(W_REQUEST) + 1) & 0xFFFFFFFF
        self.bus.write(self.address + 4 * W_REQUEST, request)
        deadline = time.monotonic() + timeout
        while self._read(W_DONE) != request:
            if time.monotonic() > deadline:
                raise NandLabError(f"'{line}' did not finish within {timeout:.0f} s (the SoC's console shows how far "
                                   f"it got); --timeout gives it longer")
            time.sleep(poll_s)
        status = self._read(W_STATUS)
        status -= (1 << 32) if status & 0x80000000 else 0
        n, lost = self._read(W_OUT_LEN), self._read(W_OUT_LOST)
        text = self._read_bytes(OUT_OFFSET, min(n, OUT_MAX)).decode("utf-8", errors="replace").replace("\r", "")
        if lost:
            text += f"\n[nandlab] {lost} more bytes of output not kept (the mailbox holds {OUT_MAX}; the console has all)\n"
        return status, text
