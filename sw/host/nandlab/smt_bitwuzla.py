"""A `bitwuzla` command for yosys-smtbmc: the SMT-LIB 2 dialogue on stdin/stdout, served by the Bitwuzla
solver's Python package (PyPI `bitwuzla`, pinned in requirements.txt), which has no program of its own.

yosys-smtbmc (`-s bitwuzla`, sby's `smtbmc bitwuzla`) runs `bitwuzla --help`, finds `--lang` in it and then
starts `bitwuzla --lang smt2`, writes one command a line and reads one answer after each `check-sat` and
`get-value`. This program reads whole commands (balanced parentheses, `|quoted|` symbols and comments
skipped), hands each to Bitwuzla's own SMT-LIB parser, which prints the answers, and flushes them.
`push` / `pop` go to the solver itself: the package's parser loses count of scopes opened in an earlier call.
`formal.run` puts this program on sby's PATH as `bitwuzla` (nandlab.formal.solver_path).
"""

import ctypes
import sys

HELP = """bitwuzla (nandlab's SMT-LIB 2 front end for the bitwuzla Python package)
usage: bitwuzla --lang smt2 [--time-limit MS]   (reads SMT-LIB 2 commands on stdin)
"""


def commands(stream):
    """Yield the top-level S-expressions of `stream`, one command at a time, as soon as each is complete."""
    buf, depth, quoted = [], 0, False
    for line in stream:
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if quoted:
                quoted = c != "|"
            elif c == "|":
                quoted = True
            elif c == ";":
                if buf:
                    buf.append(" ")
                break                       # a comment to the end of the line
            elif c == '"':
                j = line.index('"', i + 1)      # smtbmc's strings never span lines
                buf.append(line[i:j + 1])
                i = j + 1
                continue
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            if depth > 0 or quoted or c == ")":
                buf.append(c)
            if depth == 0 and not quoted and c == ")":
                yield "".join(buf)
                buf = []
            i += 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(HELP)
        return 0
    import bitwuzla as bw
    tm = bw.TermManager()
    opts = bw.Options()
    opts.set(bw.Option.PRODUCE_MODELS, True)
    if "--time-limit" in argv:
        opts.set(bw.Option.TIME_LIMIT_PER, int(argv[argv.index("--time-limit") + 1]))
    parser = bw.Parser(tm, opts)
    libc = ctypes.CDLL(None)
    for cmd in commands(sys.stdin):
        head = cmd[1:-1].split()
        if head and head[0] in ("push", "pop"):
            levels = int(head[1]) if len(head) > 1 else 1
            solver = parser.bitwuzla()
            solver.push(levels) if head[0] == "push" else solver.pop(levels)
            continue
        if head and head[0] == "exit":
            break
        try:
            parser.parse(cmd, False, False)
        except bw.BitwuzlaException as err:
            libc.fflush(None)
            msg = str(err).replace('"', "'")
            sys.stdout.write(f'(error "{msg}")\n')
            sys.stdout.flush()
            return 1
        libc.fflush(None)                   # the parser prints through C++'s stdout: hand each answer over now
    libc.fflush(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
