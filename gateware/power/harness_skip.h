// The power harness's exact skip, driver side (included by harness_main.cpp after `top` and `tick`).
//
// When the harness says `skip_ok` (gateware/power/skip.py: every die inside a segment of its
// waveform, waiting for OE or idle; the ring only rotating), one clock cycle can stand for N:
// at most every running die's `room` (no segment ends inside the stretch), short of the arrival of
// a packet at a node where it stops and, with the DCC scheduler, of every held die's start. Over
// the stretch each die's current is a line, acc + k x slope in 12.12 fixed point
// (NandLabDieSequencer), so the driver knows the summed current in every cycle of it and runs the
// current monitor's window rules (gateware/power/monitor.py) over them:
// windows closed, violations, their largest sample and histogram bins, and the monitor's state
// after the stretch. The skip cycle loads that, moves the dies' counters and ramps, the harness's
// counters and the ring's packets on by N. Results are the same as cycle by cycle (tests/
// test_harness_skip.py runs both).
//
// harness_dies.h gives the build's constants: NANDLAB_HARNESS_RING_NODES (nodes per ring),
// NANDLAB_HARNESS_WINDOW (cycles per monitor window), NANDLAB_HARNESS_ACC_FRAC / _ACC_BITS /
// _SLOPE_BITS / _CURRENT_BITS (the sequencer's ramp), NANDLAB_HARNESS_HIST_BINS / _HIST_SHIFT /
// _HIST(X) (the monitor's histogram).

#include <algorithm>
#include <cstdint>

struct SkipRamp {            // One die's current over a stretch: a line from `acc`, or 0.
    int64_t acc, slope;
    bool running;
    uint32_t at(uint64_t k) const {
        if (!running) return 0;
        const uint64_t v = (uint64_t)(acc + (int64_t)k * slope);
        return (uint32_t)((v >> NANDLAB_HARNESS_ACC_FRAC) & ((1u << NANDLAB_HARNESS_CURRENT_BITS) - 1));
    }
};

struct SkipStats {
    unsigned long long skips = 0, skipped = 0;     // skip cycles, and the cycles they stood for
};

static int64_t skip_sext(uint64_t v, int bits) {      // The ports are the signed registers' bits.
    return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

// Cycles until a packet in flight reaches a node where it stops (PowerRingSkip's `stops`): a
// packet with c bits left reaches the next node after c - 1 cycles, each later one T_trans after that.
static unsigned long long skip_ring_room() {
#define SKIP_NODE(i) {top->tx_cnt##i, top->stops##i != 0},
    const struct { unsigned left; bool stops; } node[] = {NANDLAB_HARNESS_DIES(SKIP_NODE)};
    const unsigned m = NANDLAB_HARNESS_RING_NODES, nodes = sizeof node / sizeof node[0];
    const unsigned long long nbits = top->nbits;
    unsigned long long n = ~0ULL;
    for (unsigned i = 0; i < nodes; i++) {
        if (!node[i].left) continue;
        const unsigned ring = i - i % m;
        for (unsigned d = 1; d <= m; d++) {
            if (node[ring + (i % m + d) % m].stops) {
                n = std::min(n, node[i].left - 1 + (d - 1) * nbits);
                break;
            }
        }
    }
    return n;
}

// Cycles the harness may skip from now: every running die's room and the ring's; a die with an
// operation pending (it starts as soon as it is not held) must stay held for the whole stretch.
static unsigned long long skip_room(bool use_dcc, const std::vector<long long> &start_at, unsigned long long now) {
    unsigned long long n = skip_ring_room();
#define SKIP_ROOM(i) \
    n = std::min<unsigned long long>(n, top->room##i); \
    if (top->pending##i) { \
        if (!use_dcc || start_at[i] < 0 || (unsigned long long)start_at[i] <= now) return 0; \
        n = std::min<unsigned long long>(n, (unsigned long long)start_at[i] - now); \
    }
    NANDLAB_HARNESS_DIES(SKIP_ROOM)
    return std::min(n, 1ULL << 31);     // The `skip` port's range (a stretch with no end: a deadlock).
}

// The current monitor's window rules (gateware/power/monitor.py), one cycle at a time: the largest
// registered sum of a window is its sample, counted one cycle after the strobe.
struct SkipMonitor {
    uint32_t pb, win_max, max = 0, wcount;
    bool strobe_q;
    unsigned long long windows = 0, violations = 0, hist[NANDLAB_HARNESS_HIST_BINS] = {0};

    void step(uint32_t total) {
        const uint32_t sample = std::max(total, win_max);
        if (strobe_q) {
            windows++;
            violations += sample > pb;
            max = std::max(max, sample);
            hist[std::min<uint32_t>(sample >> NANDLAB_HARNESS_HIST_SHIFT, NANDLAB_HARNESS_HIST_BINS - 1)]++;
            win_max = 0;
        } else {
            win_max = sample;
        }
        strobe_q = wcount == NANDLAB_HARNESS_WINDOW - 1;
        wcount = strobe_q ? 0 : wcount + 1;
    }
    // `k` cycles at one sum: after the first window that closes, every window's sample is `total`,
    // and the state repeats every window.
    void steps(uint32_t total, unsigned long long k) {
        for (; k && !strobe_q; k--) step(total);
        if (!k) return;
        step(total);
        k--;
        const unsigned long long whole = k / NANDLAB_HARNESS_WINDOW;
        if (whole) {
            windows += whole;
            violations += total > pb ? whole : 0;
            max = std::max(max, total);
            hist[std::min<uint32_t>(total >> NANDLAB_HARNESS_HIST_SHIFT, NANDLAB_HARNESS_HIST_BINS - 1)] += whole;
        }
        for (k -= whole * NANDLAB_HARNESS_WINDOW; k; k--) step(total);
    }
};

// One skip cycle standing for cycles now .. now + n - 1. With `check` (DCC), the summed current of
// every cycle is compared with the DCC model as the cycle-by-cycle loop does (the registered sum
// shows the previous cycle).
static void skip_over(unsigned long long n, unsigned long long now, bool check, SkipStats &stats) {
    std::vector<SkipRamp> ramps;
    uint32_t flat = 0;              // The dies whose current does not move.
#define SKIP_RAMP(i) { \
        SkipRamp r{skip_sext(top->acc##i, NANDLAB_HARNESS_ACC_BITS), \
                   skip_sext(top->slope##i, NANDLAB_HARNESS_SLOPE_BITS), top->running##i != 0}; \
        if (r.running && r.slope) ramps.push_back(r); else flat += r.at(0); \
    }
    NANDLAB_HARNESS_DIES(SKIP_RAMP)
    auto sum = [&](unsigned long long k) {
        uint32_t s = flat;
        for (const SkipRamp &r : ramps) s += r.at(k);
        return s;
    };
    SkipMonitor mon{top->pb, top->win_max, 0, top->wcount, top->strobe_q != 0};
    mon.step(top->total);           // The first cycle sees the sum registered before the stretch.
    if (ramps.empty() && !check) {
        mon.steps(flat, n - 1);
    } else {
        for (unsigned long long t = 1; t < n; t++) {
            const uint32_t total = sum(t - 1);
            if (check)
                dcc_check(total, now + t - 1);
            mon.step(total);
        }
    }
    // The ring: every packet n bit positions on, around nodes x nbits positions.
    const unsigned long long nbits = top->nbits, q = n % (NANDLAB_HARNESS_RING_NODES * nbits);
    top->skip = n; top->skip_hops = q / nbits; top->skip_rem = q % nbits; top->skip_wcount = mon.wcount;
    top->skip_total = sum(n - 1); top->skip_win_max = mon.win_max; top->skip_strobe_q = mon.strobe_q;
    top->skip_windows = mon.windows; top->skip_violations = mon.violations; top->skip_max = mon.max;
#define SKIP_HIST(k) top->skip_hist##k = mon.hist[k];
    NANDLAB_HARNESS_HIST(SKIP_HIST)
    tick();
    top->skip = 0;
    stats.skips++;
    stats.skipped += n;
}
