// Formal properties of the nandlab power ring (gateware/power/ring.py), checked with SymbiYosys.
//
// `nandlab_ring` is the ring of NODES nodes generated from Migen with a fixed token table (TG = 4,
// the default waveforms' RTs, nandlab.tokens). Each node's die is the free model of ring_die.vh: it starts
// any operation at any time, presents OI for each phase until OE, runs each phase for any number
// of cycles (at most RUN_MAX when BOUNDED_RUN is defined) and signals phase_end / atomic_end like
// nand_model/current.py. The configuration requests any policy at any time (apply), with TG = 4 and
// alpha = ALPHA. Properties hold whenever the ring runs an applied configuration.
`default_nettype none

module ring_props #(parameter NODES = 3, parameter ALPHA = 1, parameter RUN_MAX = 3, parameter BOUND = 0) (
    input wire clk
);
    localparam TT = ALPHA * 15;
`ifdef PROTECT
    // Packets with a sequence and a parity bit (the ring built with faults, protect applied).
    localparam NBITS = 3 + $clog2(TT + 1);
`else
    localparam NBITS = 1 + $clog2(TT + 1);
`endif

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    // Free inputs.
    (* anyseq *) wire [NODES-1:0] start;
    (* anyseq *) wire [NODES*2-1:0] opsel;
    (* anyseq *) wire [NODES-1:0] finish;
    (* anyseq *) wire apply;
    (* anyseq *) wire [2:0] req_mode;
    (* anyseq *) wire pause;

    `include "ring_ops.vh"

    // Ring.
    wire [NODES-1:0] request, oi_first, phase_end, atomic_end, oe;
    wire [NODES*8-1:0] oi;
    wire [NODES*8-1:0] ht, ut, tx_tokens, rt_q;
    wire [NODES-1:0] key, key_used, tx_key, tx_busy, in_atomic, req_q;
    wire [NODES*4-1:0] tx_cnt, rx_cnt;
    wire [NODES*8-1:0] tx_tok_r, rx_sr;
    wire [NODES-1:0] tx_key_r, rx_key_r, ppz_q, oe_q;
    wire running, injecting, clearing;
`ifdef PROTECT
    wire recovering;
`endif
    wire [2:0] mode;
    wire [7:0] tt;
    wire [3:0] nbits;

    nandlab_ring dut (
        .sys_clk(clk), .sys_rst(rst),
        .request(request), .oi(oi), .oi_first(oi_first), .phase_end(phase_end), .atomic_end(atomic_end),
        .oe(oe), .ht(ht), .ut(ut), .key(key), .key_used(key_used), .tx_tokens(tx_tokens), .tx_key(tx_key),
        .tx_busy(tx_busy), .in_atomic(in_atomic), .req_q(req_q), .rt_q(rt_q),
        .tx_cnt(tx_cnt), .rx_cnt(rx_cnt), .tx_tok_r(tx_tok_r), .tx_key_r(tx_key_r), .rx_sr(rx_sr),
        .rx_key_r(rx_key_r), .ppz_q(ppz_q), .oe_q(oe_q),
        .req_mode(req_mode), .req_tg(3'd4), .req_alpha(ALPHA[3:0]), .apply(apply), .pause(pause),
        .running(running), .injecting(injecting), .clearing(clearing), .mode(mode), .tt(tt), .nbits(nbits)
`ifdef PROTECT
        , .req_protect(1'b1), .recovering(recovering)
`endif
    );

    `include "ring_die.vh"

    // Sums.
    integer n;
    reg [11:0] held, flying, used, needed;
    reg [3:0] keys;
    always @(*) begin
        held = 0; flying = 0; used = 0; needed = 0; keys = 0;
        for (n = 0; n < NODES; n = n + 1) begin
            needed = needed + need_w[n];
            held = held + ht[n*8 +: 8];
            flying = flying + tx_tokens[n*8 +: 8];
            used = used + ut[n*8 +: 8];
            keys = keys + key[n] + tx_key[n] + key_used[n];
        end
    end

    // Environment: the requested policy is one the ring has.
    always @(*) assume (req_mode <= 5);
`ifdef LIVENESS
    // One token policy, applied once; nothing paused.
    reg started = 0;
    always @(posedge clk) if (running) started <= 1;
    always @(*) if (started || running) assume (!apply);
    always @(*) assume (!pause);
    always @(*) assume (req_mode >= 2 && req_mode <= 4);
`endif
`ifdef DEADLOCK
    // Fig. 4a: the keyless ring. Deadlock: every die waits at a first phase with fewer tokens than
    // it needs, none runs, nothing flies, and at least two of them hold tokens: nothing can ever
    // change (waiting nodes keep what they hold, nobody returns or sends anything).
    always @(*) assume (req_mode == 5);
    always @(*) assume (!pause);
    reg dead;
    integer d, holders;
    always @(*) begin
        dead = running && mode == 5 && flying == 0;
        holders = 0;
        for (d = 0; d < NODES; d = d + 1) begin
            dead = dead && st[d] == 1 && oi_first[d] && ht[d*8 +: 8] < rt_of(oi[d*8 +: 8]) && req_q[d];
            holders = holders + (ht[d*8 +: 8] != 0);
        end
        dead = dead && holders >= 2;
    end
    always @(posedge clk) if (!rst) cover (dead);
`endif

    // Start-up: the ring injects into a cleared ring, with the configuration the proofs are about.
    always @(posedge clk) if (!rst && injecting) begin
        assert (held + flying + used == 0 && keys == 0);
        assert (tt == TT && nbits == NBITS && mode <= 5);
    end

`ifdef PROTECT
    // With the injectors off, the receivers never reject a packet and the audit never fails.
    always @(posedge clk) if (!rst) assert (!recovering);
`endif

    always @(posedge clk) if (!rst && running) begin
        // Token conservation and one key.
        assert (held + flying + used == TT);
        assert (keys == 1);
        // Every running phase is covered by its node's tokens in use, and together they stay
        // within TT: the summed RTs never exceed the budget.
        assert (needed <= TT);
        // The applied configuration is the one the proofs are about.
        assert (tt == TT && nbits == NBITS && mode <= 5);
    end

    generate for (i = 0; i < NODES; i = i + 1) begin : node_props
        localparam P = (i + NODES - 1) % NODES;   // previous node
        `include "node_inv.vh"
        always @(posedge clk) if (!rst && running) begin
            // Links: the receiver has exactly the bits its sender sent of the packet in flight.
            assert (rx_cnt[i*4 +: 4] == (tx_busy[P] ? NBITS - tx_cnt[P*4 +: 4] : 0));
            assert (tx_cnt[i*4 +: 4] <= NBITS);
`ifdef PROTECT
            // (The token bits are followed by the sequence and parity bits: tx_cnt 2 and 1.)
            if (rx_cnt[i*4 +: 4] != 0) assert (rx_key_r[i] == tx_key_r[P] &&
                rx_sr[i*8 +: 8] == (tx_cnt[P*4 +: 4] >= 2 ? (tx_tok_r[P*8 +: 8] >> (tx_cnt[P*4 +: 4] - 2))
                                                           : tx_tok_r[P*8 +: 8]));
`else
            if (rx_cnt[i*4 +: 4] != 0) assert (rx_key_r[i] == tx_key_r[P] &&
                                               rx_sr[i*8 +: 8] == (tx_tok_r[P*8 +: 8] >> tx_cnt[P*4 +: 4]));
`endif
`ifdef LIVENESS
            // Bounded liveness: a first phase waits at most BOUND cycles (its RT <= TT).
            if (mode >= 2 && mode <= 4 && !pause) assert (waited[i] < BOUND);
`endif
        end
    end endgenerate
`ifdef REFINE
    // The compositional proof's abstraction (node_props.sv), checked on this ring: seen from node i, the
    // predecessor P's sender is the abstract predecessor and the rest of the ring (every other node's HT
    // and UT, every link but P's) is `rest`. Each packet P starts carries at most the rest's tokens plus
    // what node i's packet brings in the same cycle (the key likewise), and the rest changes by what
    // node i's packets bring minus what P's take: the steps node_props.sv's environment may take.
    reg [NODES-1:0] was_busy;
    reg [11:0] rest_out_q [0:NODES-1];
    reg [3:0] rkey_out_q [0:NODES-1];
    reg was_moving;
    always @(posedge clk) was_moving <= !clearing && !injecting;
    generate for (i = 0; i < NODES; i = i + 1) begin : refine
        localparam P = (i + NODES - 1) % NODES;
        integer j;
        reg [11:0] rest;
        reg [3:0] rkey;
        always @(*) begin
            rest = 0; rkey = 0;
            for (j = 0; j < NODES; j = j + 1) if (j != i) begin
                rest = rest + ht[j*8 +: 8] + ut[j*8 +: 8] + (j != P ? tx_tokens[j*8 +: 8] : 8'd0);
                rkey = rkey + key[j] + key_used[j] + (j != P ? tx_key[j] : 1'b0);
            end
        end
        wire [7:0] out_tok = tx_cnt[i*4 +: 4] == 1 ? tx_tok_r[i*8 +: 8] : 8'd0;
        wire out_key = tx_cnt[i*4 +: 4] == 1 && tx_key_r[i];
        always @(posedge clk) begin
            was_busy[P] <= tx_busy[P];
            rest_out_q[i] <= rest + out_tok;
            rkey_out_q[i] <= rkey + out_key;
        end
        wire started = !was_busy[P] && tx_busy[P];
        always @(posedge clk) if (!rst && past_ok && was_moving && !clearing && !injecting) begin
            if (started) assert (tx_tok_r[P*8 +: 8] <= rest_out_q[i] && (!tx_key_r[P] || rkey_out_q[i] != 0));
            assert (rest == rest_out_q[i] - (started ? tx_tok_r[P*8 +: 8] : 8'd0));
            assert (rkey == rkey_out_q[i] - (started && tx_key_r[P]));
        end
    end endgenerate
`endif
endmodule
