// The compositional (assume-guarantee) proof of the power ring: ONE node of the ring, with the ring
// controller, against an abstract rest of the ring, checked with SymbiYosys (k-induction).
//
// `nandlab_node` is one RingNode and the ring controller generated from Migen (nandlab.formal.FormalNode):
// the same Verilog a node and the controller of the N-node ring are made of. Its die is the free model of
// ring_props.sv. Everything else of the ring is abstract:
//
//  * the predecessor's sender (in_cnt, in_tok, in_key): the node's incoming link. It behaves as every
//    node's sender does (ring.py `_sender`: a packet starts only while the ring runs and the sender is
//    idle, then its bits go out key first, token count MSB first, one a cycle; CLEAR empties it), and
//    the packet it starts carries any token count and any key the rest of the ring has;
//  * the rest of the ring (rest, rest_key): the tokens and the key held, in use or in flight anywhere
//    but in this node and on its incoming link. It takes in what this node's outgoing packet brings
//    when its last bit goes out, and gives what the predecessor puts into a new packet. A new packet
//    carries at most `rest` plus what this node's packet brings in the same cycle (2 nodes: the
//    predecessor is also the successor and may forward at once), and the key only if the rest has it
//    or gets it now;
//  * the other dies: `busy_ext` (DRAIN waits for them), free.
//
// FIRST = 1: the node is node 0 (INJECT puts TT tokens and the key into it); FIRST = 0: any other node
// (INJECT puts them into the rest). docs/power_proofs.md says why the properties below, proved for
// this one node against any such environment, hold in every node of a ring of any N >= 2 nodes.
`default_nettype none

module node_props #(parameter FIRST = 1, parameter ALPHA = 1, parameter TG = 4, parameter RUN_MAX = 3) (
    input wire clk
);
    localparam NODES = 1;          // (the buses below are ring_props.sv's, for one node: i = 0)
    localparam TT = ALPHA * ((1 << TG) - 1);
    localparam NBITS = 1 + $clog2(TT + 1);

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    // Free inputs: the die, the configuration, the other dies, the predecessor's choices.
    (* anyseq *) wire [NODES-1:0] start;
    (* anyseq *) wire [NODES*2-1:0] opsel;
    (* anyseq *) wire [NODES-1:0] finish;
    (* anyseq *) wire apply;
    (* anyseq *) wire [2:0] req_mode;
    (* anyseq *) wire pause;
    (* anyseq *) wire busy_ext;
    (* anyseq *) wire env_send;
    (* anyseq *) wire [7:0] env_tok;
    (* anyseq *) wire env_key;

    `include "ring_ops.vh"

    wire [NODES-1:0] request, oi_first, phase_end, atomic_end, oe;
    wire [NODES*8-1:0] oi;
    wire [NODES*8-1:0] ht, ut, tx_tokens, rt_q, tx_tok_r, rx_sr;
    wire [NODES-1:0] key, key_used, tx_key, tx_busy, in_atomic, req_q, tx_key_r, rx_key_r, ppz_q, oe_q;
    wire [NODES*4-1:0] tx_cnt, rx_cnt;
    wire running, injecting, clearing;
    wire [2:0] mode;
    wire [7:0] tt;
    wire [3:0] nbits;
    wire in_valid, in_data;
`ifdef EXCHANGE
    // A ring with an exchange node (tests/formal/xnode_props.sv): INJECT puts the ring's home share, any
    // number of tokens up to TT, into node 0 (FIRST = 1) and the rest of the global TT into the rest of the
    // system; `rest` is then everything but this node and its link: the other rings, the exchange nodes and
    // the exchange ring too (docs/power_proofs.md, the exchange).
    (* anyseq *) wire [7:0] share;
    always @(*) if (injecting) assume (share <= tt);
    wire [7:0] rest_at_inject = FIRST ? tt - share : tt;
    localparam EXCH = 1;
`else
    localparam EXCH = 0;
    wire [7:0] rest_at_inject = tt;
`endif

    nandlab_node dut (
        .sys_clk(clk), .sys_rst(rst),
        .request(request), .oi(oi), .oi_first(oi_first), .phase_end(phase_end), .atomic_end(atomic_end),
        .oe(oe), .ht(ht), .ut(ut), .key(key), .key_used(key_used), .tx_tokens(tx_tokens), .tx_key(tx_key),
        .tx_busy(tx_busy), .in_atomic(in_atomic), .req_q(req_q), .rt_q(rt_q),
        .tx_cnt(tx_cnt), .rx_cnt(rx_cnt), .tx_tok_r(tx_tok_r), .tx_key_r(tx_key_r), .rx_sr(rx_sr),
        .rx_key_r(rx_key_r), .ppz_q(ppz_q), .oe_q(oe_q),
        .req_mode(req_mode), .req_tg(TG[2:0]), .req_alpha(ALPHA[3:0]), .apply(apply), .pause(pause),
        .x_valid(in_valid), .x_data(in_data), .busy_ext(busy_ext),
`ifdef EXCHANGE
        .inject_tt(share),
`endif
        .running(running), .injecting(injecting), .clearing(clearing), .mode(mode), .tt(tt), .nbits(nbits)
    );

    // The die (ring_props.sv's, ring_die.vh), last cycle's OI and past_ok (the strengthening).
    `include "ring_die.vh"

    // The abstract predecessor's sender (ring.py `_sender`, the same bits on the link).
    reg [3:0] in_cnt = 0;
    reg [7:0] in_tok = 0;
    reg in_key = 0;
    wire in_busy = in_cnt != 0;
    assign in_valid = in_busy;
    assign in_data = in_cnt == nbits ? in_key : in_tok >> (in_cnt - 1);
    wire [7:0] in_tokens = in_busy ? in_tok : 8'd0;
    wire in_key_fl = in_busy && in_key;

    // The rest of the ring.
    reg [11:0] rest = 0;
    reg rest_key = 0;
    wire [7:0] out_tok = tx_cnt == 1 ? tx_tok_r : 8'd0;     // this node's packet: its last bit goes out
    wire out_key = tx_cnt == 1 && tx_key_r;
    wire env_go = running && !in_busy && env_send;
`ifdef WEAK_ENV
    // Negative control: a predecessor that may put one token more into a packet than the rest has.
    always @(*) if (env_go) assume (env_tok <= rest + out_tok + 1 && (!env_key || rest_key || out_key));
`else
    always @(*) if (env_go) assume (env_tok <= rest + out_tok && (!env_key || rest_key || out_key));
`endif
    always @(posedge clk) begin
        if (rst || clearing) begin
            in_cnt <= 0; rest <= 0; rest_key <= 0;
        end else if (injecting && (!FIRST || EXCH)) begin
            rest <= rest_at_inject;
            if (!FIRST) rest_key <= 1;
        end else begin
            if (env_go) begin in_cnt <= nbits; in_tok <= env_tok; in_key <= env_key; end
            else if (in_busy) in_cnt <= in_cnt - 1;
            rest <= rest + out_tok - (env_go ? env_tok : 8'd0);
            rest_key <= (rest_key || out_key) && !(env_go && env_key);
        end
    end

    // The ring's sums, seen from this node: this node + its incoming link + the rest.
    wire [13:0] total = ht + ut + tx_tokens + in_tokens + rest;     // (wide: no sum wraps)
    wire [3:0] keys = key + tx_key + key_used + in_key_fl + rest_key;

    always @(*) assume (req_mode <= 5);

    // Once injected, the ring's tokens and key are all somewhere (through DRAIN and CLEAR too).
    reg injected = 0;
    always @(posedge clk) if (rst) injected <= 0; else if (injecting) injected <= 1;
    always @(posedge clk) if (!rst && !injected)
        assert (!running && total == 0 && keys == 0 && tx_cnt == 0 && rx_cnt == 0 && in_cnt == 0);
    always @(posedge clk) if (!rst && injecting)
        assert (total == 0 && keys == 0 && tt == TT && nbits == NBITS && mode <= 5);
    always @(posedge clk) if (!rst && injected && !injecting)
        assert (total == TT && keys == 1 && tt == TT && nbits == NBITS);

    always @(posedge clk) if (!rst && injecting) assert (in_cnt == 0);
    always @(posedge clk) if (!rst && running) assert (mode <= 5);
    // Invariants 3 and 6-8 of the node, as in ring_props.sv.
    generate for (i = 0; i < NODES; i = i + 1) begin : node_inv
        `include "node_inv.vh"
    end endgenerate

    // Link (invariant 5): the receiver has exactly the bits the predecessor sent (in every state once
    // injected: packets still go round in DRAIN).
    always @(posedge clk) if (!rst && injected) begin
        assert (rx_cnt == (in_busy ? NBITS - in_cnt : 0));
        assert (tx_cnt <= NBITS && in_cnt <= NBITS);
        if (rx_cnt != 0) assert (rx_key_r == in_key && rx_sr == (in_tok >> in_cnt));
    end
    // The guarantee the predecessor's assumption above rests on (docs/power_proofs.md): a packet this
    // node starts carries at most the tokens it held, used and took in in the cycle it started it, and
    // the key only if it held it, used it or took it in.
    reg [9:0] had_tok;
    reg had_key, was_idle;
    always @(posedge clk) begin
        had_tok <= ht + ut + (in_cnt == 1 ? in_tok : 8'd0);
        had_key <= key || key_used || (in_cnt == 1 && in_key);
        was_idle <= !tx_busy;
    end
    always @(posedge clk) if (!rst && past_ok && was_idle && tx_busy)
        assert (tx_tok_r <= had_tok && (!tx_key_r || had_key));

`ifdef COVER
    // The environment is not too narrow: the node runs a pre-charge (RT 15 = TT) in KMTPM sub-atomic on
    // tokens that came over its incoming link (FIRST = 0: none were injected into it), and its die runs
    // while packets come in and go out.
    always @(posedge clk) if (!rst) begin
        cover (running && mode == 4 && st[0] == 2 && need_w[0] == TT);
        cover (running && mode == 2 && st[0] == 2 && need_w[0] != 0 && in_busy && tx_busy);
        cover (running && mode == 1 && key_used && st[0] == 2);
    end
`endif
endmodule
