"""Checks of command-line values shared by the CLI's commands: each returns the value or raises
NandLabError naming the option, before anything is built or started."""

import ipaddress
import math

from nandlab.errors import NandLabError


def port(value, option, allow_zero=False):
    """`value` if it is a TCP/UDP port number (0 too with `allow_zero`: any free port)."""
    low = 0 if allow_zero else 1
    if not low <= value <= 65535:
        raise NandLabError(f"{option} {value} is not a port number ({low}..65535)")
    return value


def host_port(text, option):
    """(host, port) of HOST:PORT (HOST may be left out: 127.0.0.1)."""
    host, _, number = text.rpartition(":")
    if not number.isdigit():
        raise NandLabError(f"{option} {text}: expected HOST:PORT, e.g. 127.0.0.1:1236")
    return host or "127.0.0.1", port(int(number), option)


def _option(name):
    return "--" + name.replace("_", "-")


def positive(args, *names):
    """Each of `args`' attributes `names` that is given (not None) is a positive, finite number."""
    for name in names:
        value = getattr(args, name)
        if value is not None and not (0 < value and math.isfinite(value)):
            raise NandLabError(f"{_option(name)} {value}: give a positive number")


def in_range(args, name, low, high, what=""):
    """`args.<name>` (given) is an integer in low..high."""
    value = getattr(args, name)
    if value is not None and not low <= value <= high:
        raise NandLabError(f"{_option(name)} {value} is out of range: {what + ' ' if what else ''}{low}..{high}")


def ipv4(text, option):
    """`text` if it is a dotted IPv4 address a board can take (not 0.0.0.0, broadcast or multicast)."""
    try:
        addr = ipaddress.IPv4Address(text)
    except ValueError:
        raise NandLabError(f"{option} {text!r} is not an IPv4 address (e.g. 192.168.1.50)") from None
    if addr.is_unspecified or addr.is_multicast or addr == ipaddress.IPv4Address("255.255.255.255"):
        raise NandLabError(f"{option} {text}: a unicast address is needed (e.g. 192.168.1.50)")
    return text


def output_file(text, option):
    """An output file's path: its directory exists and it is not a directory itself."""
    from pathlib import Path
    path = Path(text)
    if path.is_dir():
        raise NandLabError(f"{option} {text}: is a directory; give a file name")
    if not path.absolute().parent.is_dir():
        raise NandLabError(f"{option} {text}: the directory {path.absolute().parent} does not exist")
    return path
