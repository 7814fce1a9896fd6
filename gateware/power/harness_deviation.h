// Per-die current measurement and adaptive token tables of the power harness (issue 18 b; included
// by harness_main.cpp after harness_skip.h). Python side: nandlab.deviation (the spec's "deviation").
//
// Detection: for every die and every OI (sub-atomic phase) the driver keeps the largest current the
// die drew while running that phase, read from the die's own current (`dev_cur<i>`, what a per-die
// current monitor would see) and its phase (`dev_oi<i>`). Over a skipped stretch a die's current is
// a line: the stretch ends where it would first rise above its limit (step), so the measurement is
// the same as cycle by cycle. A phase is flagged when its peak is above its limit: the larger of
// the level its RT covers (RT x I_max / (2^TG - 1), floored) and the nominal waveform's own peak in
// the same fixed point (which the compiler's ceil already covers; taking it makes a nominal die's
// rounding never look like a deviation).
//
// Adaptation (spec "adaptive"): the detected phase's RT is re-compiled from the measurement,
// ceil(peak x (2^TG - 1) / I_max) capped at TT, and written into that die's ring node only
// (`table_keep` masks the others); the phases before it in its atomic operation are raised to at
// least as much, so RTs still fall inside an atomic operation (the node never asks for tokens in
// the middle of one; the atomic modes ask for the first phase's RT). A write takes one cycle, never
// inside a skip (a tick); the ring's tokens are registers (HT, UT), so a write while running keeps
// their sum at TT; a phase granted before the write runs on with the old RT until it ends.
// Without "deviation" in the spec nothing here acts, and the counters are the harness's.

#include <deque>
#include <map>

struct Deviation {
    bool on = false, adaptive = false;
    long long den = 15, tt = 0;
    std::map<int, std::vector<int>> prefix;            // OI -> the OIs to raise with it (itself last)
    std::vector<std::map<int, uint32_t>> rt, limit;    // per die: OI -> RT loaded, -> limit (I_max / 4096)
    std::vector<bool> detected;
    struct Write { int die, oi, rt; };
    std::deque<Write> queue;
    unsigned long long writes = 0, last_write = 0, first_detect = 0, viol_at_last = 0;
    bool any_detect = false;

    void setup(const Json &spec, int dies) {
        top->table_keep = 0;
        on = spec.has("deviation");
        queue.clear(); writes = last_write = first_detect = viol_at_last = 0; any_detect = false;
        detected.assign(dies, false);
        if (!on) return;
        const Json &d = spec.at("deviation");
        adaptive = d.at("adaptive").integer();
        den = d.at("den").integer(); tt = d.at("tt").integer();
        prefix.clear();
        for (size_t k = 0; k < d.at("prefix").size(); k++) {
            const Json &p = d.at("prefix")[k];
            std::vector<int> v;
            for (size_t j = 1; j < p.size(); j++) v.push_back((int)p[j].integer());
            prefix[(int)p[0].integer()] = v;
        }
        rt.assign(dies, {}); limit.assign(dies, {});
        const Json &table = spec.at("table"), &lim = d.at("limit");
        for (int i = 0; i < dies; i++) {
            for (size_t k = 0; k < table.size(); k++) rt[i][(int)table[k][0].integer()] = (uint32_t)table[k][1].integer();
            for (size_t k = 0; k < lim.size(); k++) limit[i][(int)lim[k][0].integer()] = (uint32_t)lim[k][1].integer();
        }
    }
    void measured(int die, int oi, uint32_t peak, unsigned long long now) {
        auto it = limit[die].find(oi);
        if (it == limit[die].end() || peak <= it->second) return;
        if (!any_detect) { any_detect = true; first_detect = now; }
        detected[die] = true;
        const uint32_t need = (uint32_t)std::min<long long>(tt, ((long long)peak * den + 4095) / 4096);
        it->second = std::max<uint32_t>(peak, (uint32_t)(need * 4096 / den));
        if (!adaptive) return;
        for (int p : prefix[oi]) {
            if (rt[die][p] >= need) continue;
            rt[die][p] = need;
            queue.push_back({die, p, (int)need});
        }
    }
    // At `now`, before the harness advances: each die's current in this cycle is measured; `n` is the
    // stretch the skip offers (0 or 1: one tick). Returns the cycles to advance: 0 (one tick) when a
    // table write goes in this cycle, else `n` cut short of the first cycle in which a die's current
    // rises above its phase's limit (a line rises past it at one cycle), so that the detection, and
    // the write after it, fall in the same cycle as when the harness runs cycle by cycle.
    unsigned long long step(unsigned long long n, unsigned long long now) {
        if (!on) return n;
        top->table_we = 0;
        top->table_keep = 0;
#define DEV_OBSERVE(i) if (top->dev_oi##i) measured(i, top->dev_oi##i, top->dev_cur##i, now);
        NANDLAB_HARNESS_DIES(DEV_OBSERVE)
        if (!queue.empty()) {
            const Write w = queue.front();
            queue.pop_front();
            top->table_keep = ((1ULL << detected.size()) - 1) & ~(1ULL << w.die);     // this die's node only
            top->table_adr = w.oi; top->table_dat = w.rt; top->table_we = 1;
            writes++; last_write = now; viol_at_last = top->violations;
            return 0;
        }
#define DEV_CUT(i) \
        if (n >= 2 && top->dev_oi##i) { \
            SkipRamp r{skip_sext(top->acc##i, NANDLAB_HARNESS_ACC_BITS), \
                       skip_sext(top->slope##i, NANDLAB_HARNESS_SLOPE_BITS), top->running##i != 0}; \
            auto it = limit[i].find(top->dev_oi##i); \
            if (it != limit[i].end() && r.slope > 0 && r.at(n - 1) > it->second) { \
                unsigned long long lo = 0, hi = n - 1;      /* at(lo) <= limit < at(hi) */ \
                while (hi - lo > 1) { const unsigned long long mid = (lo + hi) / 2; \
                    (r.at(mid) > it->second ? hi : lo) = mid; } \
                n = hi; \
            } \
        }
        NANDLAB_HARNESS_DIES(DEV_CUT)
        return n;
    }
    void print() const {
        if (!on) return;
        printf(", \"detected\": [");
        bool first = true;
        for (size_t i = 0; i < detected.size(); i++)
            if (detected[i]) { printf(first ? "%zu" : ",%zu", i); first = false; }
        printf("], \"first_detect\": %llu, \"table_writes\": %llu, \"last_write\": %llu, "
               "\"violations_adapting\": %llu", first_detect, writes, last_write, viol_at_last);
    }
};
