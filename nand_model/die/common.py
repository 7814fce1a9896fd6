"""Encodings and helpers the parts of the die emulator share (output sources, engine operations, rows)."""

from functools import reduce
from operator import or_

from migen import Cat

# Output sources.
SRC_NONE, SRC_STATUS, SRC_ID, SRC_PARAM, SRC_FEATURE, SRC_PAGE = range(6)
# Array engine operations.
OP_READ, OP_PROGRAM, OP_ERASE = range(3)
NO_REASON = 15
# Cache commands waiting for the array: 31h, 3Fh, 15h, and 10h after a 15h.
PEND_READ_NEXT, PEND_READ_END, PEND_PROG_CACHE, PEND_PROG_FINAL = 1, 2, 3, 4

STORAGES = ("bram", "wishbone", "sim")
GEN_BITS = 4      # Page-register generation tag (a 36-bit BRAM word with the data).


def words(n):
    """32-bit words holding n bytes."""
    return (n + 3) // 4


def die_storage_bytes(config):
    """Bytes of array storage of a die: every page with its spare, rounded up to 32-bit words."""
    part = config.part
    return part.pages_per_block * part.blocks_per_lun * words(config.page_bytes) * 4


def bit(vector, index):
    """Bit `index` (a signal) of `vector`."""
    return (vector >> index)[0]


def phys(config, r, alt):
    """Physical page register of logical register `r`: with cache operations each is a pair and
    bit r of `alt` picks one of it."""
    return Cat(bit(alt, r), r) if config.with_cache else r


# Row address fields (page, then block; bits above them must be zero for this die) ----------------

def row_page(config, r):
    return r[:config.page_bits] if config.page_bits else 0


def row_block(config, r):
    pb, bb = config.page_bits, config.block_bits
    return r[pb:pb + bb] if bb else 0


def row_in_range(config, r, page=None, block=None):
    """`r` addresses a page of this die (`page`/`block`: its fields, when already decoded)."""
    part = config.part
    page = row_page(config, r) if page is None else page
    block = row_block(config, r) if block is None else block
    return (r[config.page_bits + config.block_bits:] == 0) & (block < part.blocks_per_lun) \
        & (page < part.pages_per_block)


def row_bad(config, block):
    """`block` is one of the die's factory bad blocks."""
    return reduce(or_, [block == b for b in config.bad_blocks], 0)


def bad_block_markers(config):
    """{array word: value} of the factory bad-block markers (00h in spare byte 0 of a bad block's
    first page); every other word of an erased array is FFFFFFFFh."""
    part = config.part
    w, lane = divmod(part.page_size, 4)
    return {block * part.pages_per_block * words(config.page_bytes) + w: 0xFFFFFFFF & ~(0xFF << (8 * lane))
            for block in config.bad_blocks}
