// C++ Verilator main of the power harness (gateware/power/harness.py): the harness at Verilator speed
// (cocotb drives every clock edge through its GPI, which caps it near 0.2 M cycles/s), with the DCC
// scheduler (sw/firmware/dcc.c) gating the dies' starts for the DCC policy.
//
//   Vnandlab_harness SPEC [JOB ...]
//
// runs the listed jobs of the spec (indexes into its "jobs"; all of them when none is given) and
// prints one JSON line of counters per job. SPEC is the harness spec, the JSON file the cocotb
// driver (tests/tb/experiment_tb.py) reads too; its format is documented once, in
// nandlab.experiment.harness_spec. The ports are those of nandlab.experiment.HarnessTop (built with
// the skip); harness_dies.h (written beside this file by nandlab.experiment) lists the dies and the
// build's constants. With the spec's "skip", quiet stretches take one cycle each (harness_skip.h);
// the counters are the same, and a line of skip statistics goes to stderr. With the spec's "record",
// the first cycles of a job are run one by one and the peak current of each window in them is
// added to its line ("trace"). A DCC job's "decision_cycles" charge each scheduling decision that many
// cycles of one CPU, decisions one after another (the firmware's measured cost, nandlab.dcc_fw).

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include "Vnandlab_harness.h"
#include "verilated.h"
#include "dcc.h"
#include "harness_dies.h"       // NANDLAB_HARNESS_DIES(X): X(i) for every die i

// A reader of the spec's JSON: objects, arrays, strings without \u escapes, integers, true/false
// (the spec holds nothing else; anything else is refused).
struct Json {
    enum Kind { NUL, BOOL, INT, STR, ARR, OBJ } kind = NUL;
    long long num = 0;
    std::string str;
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> fields;

    const Json &at(const char *key) const {
        for (auto &f : fields) if (f.first == key) return f.second;
        throw std::runtime_error(std::string("no \"") + key + "\" in the spec");
    }
    bool has(const char *key) const {
        for (auto &f : fields) if (f.first == key) return true;
        return false;
    }
    const Json &operator[](size_t i) const {
        if (kind != ARR || i >= items.size()) throw std::runtime_error("array index out of range");
        return items[i];
    }
    long long integer() const {
        if (kind == BOOL || kind == INT) return num;
        throw std::runtime_error("integer expected");
    }
    size_t size() const {
        if (kind != ARR) throw std::runtime_error("array expected");
        return items.size();
    }
};

static void skip_space(const char *&p) { while (*p && isspace((unsigned char)*p)) p++; }

static void expect(const char *&p, char c) {
    skip_space(p);
    if (*p != c) throw std::runtime_error(std::string("'") + c + "' expected");
    p++;
}

static Json parse_json(const char *&p) {
    skip_space(p);
    Json v;
    if (*p == '{' || *p == '[') {
        const bool obj = *p++ == '{';
        const char close = obj ? '}' : ']';
        v.kind = obj ? Json::OBJ : Json::ARR;
        skip_space(p);
        if (*p == close) { p++; return v; }
        for (;;) {
            if (obj) {
                Json key = parse_json(p);
                if (key.kind != Json::STR) throw std::runtime_error("object key expected");
                expect(p, ':');
                v.fields.emplace_back(key.str, parse_json(p));
            } else {
                v.items.push_back(parse_json(p));
            }
            skip_space(p);
            if (*p == ',') { p++; continue; }
            expect(p, close);
            return v;
        }
    }
    if (*p == '"') {
        v.kind = Json::STR;
        for (p++; *p != '"'; p++) {
            if (!*p) throw std::runtime_error("unterminated string");
            if (*p == '\\') {
                p++;
                if (*p != '"' && *p != '\\' && *p != '/') throw std::runtime_error("unsupported string escape");
            }
            v.str += *p;
        }
        p++;
        return v;
    }
    if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        v.kind = Json::BOOL;
        v.num = *p == 't';
        p += v.num ? 4 : 5;
        return v;
    }
    if (*p == '-' || isdigit((unsigned char)*p)) {
        char *end;
        v.kind = Json::INT;
        v.num = strtoll(p, &end, 10);
        if (*end == '.' || *end == 'e' || *end == 'E') throw std::runtime_error("integers only");
        p = end;
        return v;
    }
    throw std::runtime_error(*p ? std::string("unexpected '") + *p + "'" : "unexpected end");
}

static Json read_spec(const char *path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open it");
    std::stringstream text;
    text << f.rdbuf();
    const std::string s = text.str();
    const char *p = s.c_str();
    Json spec = parse_json(p);
    skip_space(p);
    if (*p || spec.kind != Json::OBJ) throw std::runtime_error("one JSON object expected");
    return spec;
}

static Vnandlab_harness *top;
static void tick() { top->sys_clk = 0; top->eval(); top->sys_clk = 1; top->eval(); }
static struct dcc sched;
static dcc_model models[4];                 // sched points at them
static std::vector<dcc_piece> pieces[4];    // and they at these
static uint32_t dcc_bus = 0;                // The channels' transfer current DCC keeps aside (the check adds it).

// What DCC reserved, for the check (--check-dcc): each operation it started, from its start cycle, at
// its model's levels, summed here from the models rather than read from the scheduler's staircase.
// A decision taken ahead of the clock (dcc_fw: the CPU is busy until then) clears from the staircase
// the operations over by that time, which still run in the cycles the check looks at; the reference
// keeps them until they are over.
struct DccReserved {
    struct Res { unsigned long long start, end; unsigned op; };
    std::vector<Res> res;
    std::vector<unsigned long long> ends[4];     // per model: where each piece ends, from the start
    void setup() {
        res.clear();
        for (int k = 0; k < 4; k++) {
            ends[k].clear();
            unsigned long long at = 0;
            for (const dcc_piece &p : pieces[k]) ends[k].push_back(at += p.cycles);
        }
    }
    void add(unsigned long long start, unsigned op) {
        if (!ends[op].empty() && ends[op].back()) res.push_back({start, start + ends[op].back(), op});
    }
    void retire(unsigned long long t) {          // Drops what is over at t (later checks look at t or later).
        res.erase(std::remove_if(res.begin(), res.end(), [t](const Res &r) { return r.end <= t; }), res.end());
    }
    uint32_t at(unsigned long long t) const {
        uint32_t sum = 0;
        for (const Res &r : res) {
            if (t < r.start || t >= r.end) continue;
            const std::vector<unsigned long long> &e = ends[r.op];
            sum += pieces[r.op][std::upper_bound(e.begin(), e.end(), t - r.start) - e.begin()].level;
        }
        return sum;
    }
};
static DccReserved reserved;

struct Failure : std::runtime_error { using std::runtime_error::runtime_error; };

// --check-dcc at cycle t: the dies' summed current is within what DCC reserved plus the bus's current,
// and what DCC reserved is within its cap (the scheduler's promise, checked apart from its staircase).
static void dcc_check(uint32_t total, unsigned long long t) {
    char msg[160];
    const uint32_t model = reserved.at(t);
    if (model > sched.cap) {
        snprintf(msg, sizeof msg, "DCC reserved above its cap at cycle %llu: %u > %u", t, model, sched.cap);
        throw Failure(msg);
    }
    if (total > model + dcc_bus) {
        snprintf(msg, sizeof msg, "DCC model below the dies' current at cycle %llu: %u > %u", t,
                 (unsigned)total, model + dcc_bus);
        throw Failure(msg);
    }
}

#include "harness_skip.h"
#include "harness_deviation.h"   // per-die detection, adaptive tables (spec "deviation")
static Deviation dev;

// The job's own models when it has them (policies dcc_flat, dcc_fw_flat), else the spec's.
static void dcc_setup(const Json &dcc, const Json &job) {
    const Json &m = job.has("models") ? job.at("models") : dcc.at("models");
    if (m.size() != 4) throw std::runtime_error("DCC: four models expected (read, program LSB / MSB, erase)");
    for (int k = 0; k < 4; k++) {
        pieces[k].resize(m[k].size());
        for (size_t i = 0; i < pieces[k].size(); i++)
            pieces[k][i] = {(uint32_t)m[k][i][0].integer(), (uint32_t)m[k][i][1].integer()};
        models[k] = {pieces[k].data(), (uint32_t)pieces[k].size()};
    }
    dcc_bus = dcc.has("bus") ? (uint32_t)dcc.at("bus").integer() : 0;
    int rc = dcc_init(&sched, (uint32_t)dcc.at("cap").integer(), models, 4);
    if (rc) throw Failure("DCC models refused (error " + std::to_string(rc) + ")");
    reserved.setup();
}

static void run_job(const Json &spec, const Json &job) {
#define PORT(name, i) &top->name##i,
#define HOLD(i) PORT(hold, i)
#define PENDING(i) PORT(pending, i)
#define NEXT_OP(i) PORT(next_op, i)
#define COUNT(i) PORT(count, i)
    CData *hold[] = {NANDLAB_HARNESS_DIES(HOLD)};
    CData *pending[] = {NANDLAB_HARNESS_DIES(PENDING)};
    CData *next_op[] = {NANDLAB_HARNESS_DIES(NEXT_OP)};
    decltype(&top->count0) count[] = {NANDLAB_HARNESS_DIES(COUNT)};
    const int dies = (int)spec.at("dies").integer();
    if (dies != (int)(sizeof hold / sizeof hold[0])) throw std::runtime_error("the spec's dies differ from the build's");
    const std::string policy = job.at("policy").str;
    const long long ratio = job.at("ratio").integer();
    const bool use_dcc = job.at("dcc").integer();
    const bool check = use_dcc && spec.at("dcc").at("check").integer();
    const bool skipping = spec.has("skip") && spec.at("skip").integer();
    const Json &trace = spec.at("traces").at(std::to_string(ratio).c_str());
    const unsigned long long record = spec.has("record") ? (unsigned long long)spec.at("record").integer() : 0;
    if (use_dcc) dcc_setup(spec.at("dcc"), job);
    const unsigned long long decision = use_dcc && job.has("decision_cycles") ?
        (unsigned long long)job.at("decision_cycles").integer() : 0;
    top->load_we = 0; top->go = 0; top->apply = 0; top->table_we = 0; top->table_clear = 0;
    dev.setup(spec, dies);
#ifdef NANDLAB_HARNESS_EXCHANGE
    // The tests' negative control: exchange nodes that create a token whenever they borrow.
    top->mutate = spec.has("mutate") && spec.at("mutate").integer();
#endif
    for (int i = 0; i < dies; i++) *hold[i] = use_dcc;
    top->sys_rst = 1; tick(); tick(); tick(); top->sys_rst = 0; tick();
    const Json &table = spec.at("table");
    for (size_t k = 0; k < table.size(); k++) {
        top->table_adr = table[k][0].integer(); top->table_dat = table[k][1].integer(); top->table_we = 1; tick();
    }
    top->table_we = 0;
    top->req_mode = job.at("mode").integer(); top->req_tg = spec.at("tg").integer();
    top->req_alpha = spec.at("alpha").integer(); top->apply = 1; tick(); top->apply = 0;
    std::vector<int> counts(dies, 0);
    for (size_t k = 0; k < trace.size(); k++) {
        const int die = (int)trace[k][0].integer();
        if (die < 0 || die >= dies) throw std::runtime_error("a trace names a die the harness does not have");
        top->load_die = die; top->load_adr = counts[die]++; top->load_op = trace[k][1].integer(); top->load_we = 1;
        tick();
    }
    top->load_we = 0;
    for (int i = 0; i < dies; i++) *count[i] = counts[i];
    for (int i = 0; i < 20; i++) tick();
    if (!top->running || top->error) throw Failure("ring not running (error " + std::to_string(top->error) + ")");
    top->go = 1; tick(); top->go = 0;
    // DCC: an operation a die shows (pending) is scheduled once; the die is held until its start.
    std::vector<long long> start_at(dies, -1);
    unsigned long long now = 0, dcc_waited = 0, dcc_read_wait = 0, dcc_prog_wait = 0;
    unsigned long long cpu_free = 0, decisions = 0;   // DCC with decision_cycles: the CPU is busy until cpu_free
    char msg[160];
    SkipStats stats;
    std::vector<unsigned> windows;                       // record: each window's peak summed current
    unsigned window_peak = 0;
    while (!top->done) {
        unsigned long long held = 0, held_reads = 0, held_progs = 0;    // DCC: dies held this cycle
        if (use_dcc) {
            for (int i = 0; i < dies; i++) {
                if (!*pending[i]) { *hold[i] = 1; continue; }
                if (start_at[i] < 0) {
                    // One CPU: a decision starts when the one before it is done and takes `decision`
                    // cycles; the operation may start when it is taken, no earlier.
                    unsigned long long at = now;
                    if (decision) { cpu_free = std::max(cpu_free, now) + decision; at = cpu_free; }
                    decisions++;
                    long long s = dcc_schedule(&sched, *next_op[i], at);
                    if (s < 0) throw Failure("DCC scheduler error " + std::to_string(s));
                    start_at[i] = s;
                    if (check) reserved.add((unsigned long long)s, *next_op[i]);
                }
                if ((unsigned long long)start_at[i] <= now) { *hold[i] = 0; start_at[i] = -1; }
                else {
                    // Held: waiting counts in the operation's latency, as a token wait does.
                    *hold[i] = 1; held++;
                    if (*next_op[i] == 0) held_reads++;
                    else if (*next_op[i] != 3) held_progs++;
                }
            }
            // The monitor's sum is registered: it shows the previous cycle.
            if (check && now > 0) {
                reserved.retire(now - 1);
                dcc_check(top->total, now - 1);
            }
        }
        // The global token sum (held, in flight, in use; exchange nodes too) is TT in every cycle the
        // rings run: the harness counts the cycles it is not, and the first one ends the run.
        if (top->cons_errors) {
            snprintf(msg, sizeof msg, "token conservation broken at cycle %llu: the global token sum is not TT", now);
            throw Failure(msg);
        }
        // A quiet stretch in one cycle, or one cycle.
        unsigned long long n = skipping && top->skip_ok && now >= record ? skip_room(use_dcc, start_at, now) : 0;
        n = dev.step(n, now);       // the dies' currents measured (harness_deviation.h): a table write, or a cut
        if (n >= 2) {
            skip_over(n, now, check, stats);
        } else {
            tick();
            n = 1;
            if (now < record) {
                window_peak = std::max<unsigned>(window_peak, top->total);
                if ((now + 1) % NANDLAB_HARNESS_WINDOW == 0) { windows.push_back(window_peak); window_peak = 0; }
            }
        }
        // A held die waits in every cycle of a skip as it does in this one.
        dcc_waited += n * held; dcc_read_wait += n * held_reads; dcc_prog_wait += n * held_progs;
        if ((now += n) > 4000000000ULL) throw Failure("harness never finished");
    }
    if (skipping) fprintf(stderr, "{\"skips\": %llu, \"skipped_cycles\": %llu}\n", stats.skips, stats.skipped);
    unsigned long long ops = 0, reads = 0, rc = dcc_read_wait, progs = 0, pc = dcc_prog_wait, erases = 0;
    unsigned long long waited = dcc_waited;
#define SUM(i) \
    ops += top->ops_done##i; reads += top->kind_ops##i##_0; rc += top->kind_cycles##i##_0; \
    progs += top->kind_ops##i##_1; pc += top->kind_cycles##i##_1; erases += top->kind_ops##i##_2; \
    waited += top->waited##i;
    NANDLAB_HARNESS_DIES(SUM)
    printf("{\"policy\": \"%s\", \"ratio\": %lld, \"cycles\": %llu, \"ops\": %llu, \"reads\": %llu, "
           "\"read_cycles\": %llu, \"progs\": %llu, \"prog_cycles\": %llu, \"erases\": %llu, "
           "\"waited\": %llu, \"violations\": %llu, \"windows\": %llu, \"max\": %llu, \"cons_errors\": %llu",
           policy.c_str(), ratio, (unsigned long long)top->cycles, ops, reads, rc, progs, pc, erases, waited,
           (unsigned long long)top->violations, (unsigned long long)top->windows,
           (unsigned long long)top->max_sample, (unsigned long long)top->cons_errors);
#ifdef NANDLAB_HARNESS_EXCHANGE
    printf(", \"lent\": %llu, \"borrowed\": %llu", (unsigned long long)top->lent, (unsigned long long)top->borrowed);
#endif
    if (use_dcc && decision) printf(", \"decisions\": %llu, \"decision_cycles\": %llu", decisions, decision);
    if (record) {
        printf(", \"trace\": [");
        for (size_t k = 0; k < windows.size(); k++) printf(k ? ",%u" : "%u", windows[k]);
        printf("]");
    }
    dev.print();
    printf("}\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    if (argc < 2) { fprintf(stderr, "usage: %s SPEC [JOB ...]\n", argv[0]); return 2; }
    Json spec;
    std::vector<size_t> jobs;
    try {
        spec = read_spec(argv[1]);
        for (int a = 2; a < argc; a++) jobs.push_back(strtoul(argv[a], nullptr, 10));
        if (jobs.empty()) for (size_t k = 0; k < spec.at("jobs").size(); k++) jobs.push_back(k);
    } catch (const std::exception &e) {
        fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
    }
    top = new Vnandlab_harness;
    int status = 0;
    try {
        for (size_t k : jobs) run_job(spec, spec.at("jobs")[k]);
    } catch (const Failure &e) {
        fprintf(stderr, "%s\n", e.what());
        status = 1;
    } catch (const std::exception &e) {
        fprintf(stderr, "%s: %s\n", argv[1], e.what());
        status = 2;
    }
    delete top;
    return status;
}
