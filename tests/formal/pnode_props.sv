// The compositional (assume-guarantee) proof of the packet-protected ring (ring.py built `with_faults`, protect
// applied: every packet {key, token count MSB first, sequence bit, parity bit}): ONE protected node with the ring
// controller against an abstract rest of the ring whose link into the node drops, duplicates and corrupts
// packets, checked with SymbiYosys (k-induction). node_props.sv is the same proof without faults.
//
// `nandlab_pnode` (nandlab.formal_protect.FormalPNode) is one protected RingNode and the ring controller with its
// recovery (a rejected packet or a failed audit while running: DRAIN, CLEAR, INJECT with the same
// configuration). Its die is ring_props.sv's free die. Abstract:
//
//  * the predecessor: starts a packet only while the ring runs, with any token count and key the rest of the
//    ring has (below), any sequence bit, and the parity its sender computes (the guarantee below shows every
//    real node's packets have it);
//  * the link (the hop and its fault injector; ringfault.py RingHopFault): it carries whole packets, one bit a
//    cycle, each bit once, key first. A packet the predecessor starts goes onto the link at once or waits
//    (q_*: after a duplicate the hop delays what follows by one packet); on the link it is
//      - delivered as sent, or with ONE bit inverted (FAULT_FLIP: any bit, key to parity),
//      - or dropped (FAULT_DROP: it never reaches the node; a waiting packet overwritten by a newer one is
//        dropped too),
//    and the packet last on the link may be sent again, bit for bit (FAULT_DUP: the copy; also of a copy);
//  * the rest of the ring (rest, rest_key): the tokens and the key anywhere but in this node, on its link, or
//    lost on its link. It takes in this node's packet when its last bit goes out, gives what the predecessor
//    starts; a new packet carries at most rest + that packet (two nodes: the predecessor forwards at once);
//  * the whole ring's audit and the other nodes' rejections (`audit`): free, so a recovery may start in any
//    cycle the ring runs; the other dies (busy_ext): free.
//
// The ghost `lost` / `lost_key` count what the link lost: packets dropped, and packets the node rejected.
// docs/power_proofs.md ("The packet-protected ring") turns this node's proof into the budget safety of a ring
// of any N >= 2 protected nodes under that fault model.
`default_nettype none

module pnode_props #(parameter FIRST = 1, parameter ALPHA = 1, parameter TG = 4, parameter RUN_MAX = 3) (
    input wire clk
);
    localparam NODES = 1;
    localparam TT = ALPHA * ((1 << TG) - 1);
    localparam TBITS = $clog2(TT + 1);
    localparam NBITS = TBITS + 3;             // key, token count, sequence bit, parity bit

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    (* anyseq *) wire [NODES-1:0] start;
    (* anyseq *) wire [NODES*2-1:0] opsel;
    (* anyseq *) wire [NODES-1:0] finish;
    (* anyseq *) wire apply, pause, busy_ext, audit;
    (* anyseq *) wire [2:0] req_mode;
    (* anyseq *) wire env_send, env_key, env_seq;      // the predecessor
    (* anyseq *) wire [7:0] env_tok;
    (* anyseq *) wire w_go, w_dup, w_flip, q_drop;      // the link
    (* anyseq *) wire [3:0] w_fpos, w_fpos2;

    `include "ring_ops.vh"

    wire [NODES-1:0] request, oi_first, phase_end, atomic_end, oe;
    wire [NODES*8-1:0] oi;
    wire [NODES*8-1:0] ht, ut, tx_tokens, rt_q, tx_tok_r, rx_sr;
    wire [NODES-1:0] key, key_used, tx_key, tx_busy, in_atomic, req_q, tx_key_r, rx_key_r, ppz_q, oe_q;
    wire [NODES*4-1:0] tx_cnt, rx_cnt;
    wire rx_seq_r, rx_par_r, rx_last, tx_seq, tx_par, rx_bad_parity, rx_bad_seq, tx_valid, tx_data;
    wire running, injecting, clearing, protect, recovering;
    wire [2:0] mode;
    wire [7:0] tt;
    wire [3:0] nbits;
    wire in_valid, in_data;

    nandlab_pnode dut (
        .sys_clk(clk), .sys_rst(rst),
        .request(request), .oi(oi), .oi_first(oi_first), .phase_end(phase_end), .atomic_end(atomic_end),
        .oe(oe), .ht(ht), .ut(ut), .key(key), .key_used(key_used), .tx_tokens(tx_tokens), .tx_key(tx_key),
        .tx_busy(tx_busy), .in_atomic(in_atomic), .req_q(req_q), .rt_q(rt_q),
        .tx_cnt(tx_cnt), .rx_cnt(rx_cnt), .tx_tok_r(tx_tok_r), .tx_key_r(tx_key_r), .rx_sr(rx_sr),
        .rx_key_r(rx_key_r), .ppz_q(ppz_q), .oe_q(oe_q), .rx_seq_r(rx_seq_r), .rx_par_r(rx_par_r),
        .rx_last(rx_last), .tx_seq(tx_seq), .tx_par(tx_par), .rx_bad_parity(rx_bad_parity),
        .rx_bad_seq(rx_bad_seq), .tx_valid(tx_valid), .tx_data(tx_data),
        .req_mode(req_mode), .req_tg(TG[2:0]), .req_alpha(ALPHA[3:0]), .apply(apply), .pause(pause),
        .x_valid(in_valid), .x_data(in_data), .busy_ext(busy_ext), .req_protect(1'b1), .audit_ext(audit),
        .running(running), .injecting(injecting), .mode(mode), .tt(tt), .nbits(nbits), .protect(protect),
        .recovering(recovering), .clearing(clearing)
    );

    `include "ring_die.vh"

    // The predecessor's packet waiting for the link.
    reg q_valid = 0, q_key = 0, q_seq = 0;
    reg [7:0] q_tok = 0;
    // The packet on the link (or last on it: w_had): what the predecessor sent (w_tok, w_key, w_seq), whether
    // a bit is inverted and which, and whether it is the original (w_fresh) or a copy.
    reg [3:0] w_cnt = 0, w_pos = 0, w_pos2 = 0;
    reg [7:0] w_tok = 0;
    reg w_key = 0, w_seq = 0, w_fresh = 0, w_flipped = 0, w_had = 0;
    wire [TBITS-1:0] w_tbits = w_tok[TBITS-1:0];
    wire [NBITS-1:0] w_clean = {w_key, w_tbits, w_seq, w_key ^ w_seq ^ (^w_tbits)};
    wire [15:0] w_one = 16'd1 << w_pos;
`ifdef WEAK_ENV
    // Negative control: a link that may invert two bits of a packet (outside the fault model).
    wire [15:0] w_mask = w_flipped ? (w_one | (16'd1 << w_pos2)) : 16'd0;
`else
    wire [15:0] w_mask = w_flipped ? w_one : 16'd0;
`endif
    wire [NBITS-1:0] w_word = w_clean ^ w_mask[NBITS-1:0];
    wire w_busy = w_cnt != 0;
    wire [NBITS-1:0] w_now = w_word >> (w_cnt - 4'd1);
    assign in_valid = w_busy;
    assign in_data = w_busy && w_now[0];
    wire w_last = w_cnt == 1;
    wire took = w_last && !rx_bad_parity && !rx_bad_seq;   // the node takes the packet completing now

    reg [11:0] rest = 0, lost = 0;
    reg rest_key = 0, lost_key = 0;
    wire [7:0] out_tok = tx_cnt == 1 ? tx_tok_r : 8'd0;      // this node's packet: its last bit goes out
    wire out_key = tx_cnt == 1 && tx_key_r;
    wire env_go = running && env_send;
    always @(*) if (env_go) assume (env_tok <= rest + out_tok && (!env_key || rest_key || out_key));
    always @(*) assume (w_fpos < NBITS && w_fpos2 < NBITS && w_fpos2 != w_fpos);
    always @(*) assume (req_mode <= 5);

    wire w_start = !clearing && !injecting && w_cnt <= 1 && w_go && (w_dup ? w_had : (env_go || q_valid));
    wire w_new = w_start && !w_dup;            // an original: the predecessor's new packet, else the waiting one
    wire from_q = w_new && !env_go;
    wire to_q = env_go && !w_new;
    wire q_lost = q_valid && !from_q && (to_q || q_drop);
    wire w_lost = w_last && w_fresh && !took;
    always @(posedge clk) begin
        if (rst || clearing) begin
            q_valid <= 0; w_cnt <= 0; w_had <= 0; w_fresh <= 0; rest <= 0; rest_key <= 0; lost <= 0; lost_key <= 0;
        end else if (injecting) begin
            if (!FIRST) begin rest <= tt; rest_key <= 1; end
        end else begin
            if (w_start) begin
                w_cnt <= nbits; w_had <= 1; w_fresh <= w_new;
                if (w_new) begin
                    w_tok <= from_q ? q_tok : env_tok; w_key <= from_q ? q_key : env_key;
                    w_seq <= from_q ? q_seq : env_seq; w_flipped <= w_flip; w_pos <= w_fpos; w_pos2 <= w_fpos2;
                end
            end else if (w_busy) w_cnt <= w_cnt - 1;
            if (to_q) begin q_valid <= 1; q_tok <= env_tok; q_key <= env_key; q_seq <= env_seq; end
            else if (from_q || q_drop) q_valid <= 0;
            rest <= rest + out_tok - (env_go ? env_tok : 8'd0);
            rest_key <= (rest_key || out_key) && !(env_go && env_key);
            lost <= lost + (q_lost ? q_tok : 8'd0) + (w_lost ? w_tok : 8'd0);
            lost_key <= lost_key || (q_lost && q_key) || (w_lost && w_key);
        end
    end

    // The ring's sums seen from this node: the node, its link (waiting and on the wire, originals only), the
    // rest, and what its link lost (wide: no sum wraps).
    wire [7:0] q_tokens = q_valid ? q_tok : 8'd0;
    wire [7:0] w_tokens = w_busy && w_fresh ? w_tok : 8'd0;
    wire [13:0] total = ht + ut + tx_tokens + q_tokens + w_tokens + rest + lost;
    wire [3:0] keys = key + tx_key + key_used + (q_valid && q_key) + (w_busy && w_fresh && w_key) + rest_key +
                      lost_key;

    reg injected = 0;
    always @(posedge clk) if (rst) injected <= 0; else if (injecting) injected <= 1;
    always @(posedge clk) if (!rst && !injected)
        assert (!running && !recovering && total == 0 && keys == 0 && tx_cnt == 0 && rx_cnt == 0 && w_cnt == 0 &&
                !q_valid && !w_had);
    always @(posedge clk) if (!rst && injecting)
        assert (total == 0 && keys == 0 && tt == TT && nbits == NBITS && mode <= 5 && protect &&
                w_cnt == 0 && !q_valid && !w_had);
    // Conservation with the losses counted: faults only ever lose tokens (and the key), never make any.
    always @(posedge clk) if (!rst && injected && !injecting)
        assert (total == TT && keys == 1 && tt == TT && nbits == NBITS && protect);
    always @(posedge clk) if (!rst && (running || injected)) assert (mode <= 5);   // (a recovery keeps it)
    generate for (i = 0; i < NODES; i = i + 1) begin : node_inv
        `include "node_inv.vh"
    end endgenerate

    // The receiver is in step with the link: it holds the bits sent so far of the packet on it.
    always @(posedge clk) if (!rst && injected) begin
        assert (rx_cnt == (w_busy ? NBITS - w_cnt : 0));
        assert (tx_cnt <= NBITS && w_cnt <= NBITS && (!w_busy || w_had));
        if (w_had) assert (w_pos < NBITS && w_pos2 < NBITS && w_pos2 != w_pos);
        if (rx_cnt != 0) begin
            assert (rx_key_r == w_word[NBITS-1] && rx_par_r == ^(w_word >> w_cnt));
            assert (rx_sr == (w_word[NBITS-2:0] >> (w_cnt >= 2 ? w_cnt : 4'd2)));
            if (w_cnt == 1) assert (rx_seq_r == w_word[1]);
        end
        // The packet last on the link was taken (its sequence bit is the last taken) or is corrupted: a copy
        // of it is rejected.
        if (w_had && (!w_busy || !w_fresh)) assert (w_seq == rx_last || w_flipped);
        // A copy or a corrupted packet is never taken. (Left out of the negative controls, CONTROL: they must
        // break conservation itself.)
`ifndef CONTROL
        if (w_last && (!w_fresh || w_flipped)) assert (!took);
`endif
    end

    // The guarantee the predecessor's assumption rests on (docs/power_proofs.md): a packet this node starts
    // carries at most the tokens it held, used and took in in that cycle, the key only if it had it; and
    // its bits are those the link model sends: key, token count MSB first, sequence bit, the parity over them.
    reg [9:0] had_tok;
    reg had_key, was_idle;
    always @(posedge clk) begin
        had_tok <= ht + ut + (took ? w_tok : 8'd0);
        had_key <= key || key_used || (took && w_key);
        was_idle <= !tx_busy;
    end
    wire [TBITS-1:0] t_tbits = tx_tok_r[TBITS-1:0];
    wire [NBITS-1:0] t_word = {tx_key_r, t_tbits, tx_seq, tx_key_r ^ tx_seq ^ (^t_tbits)};
    wire [NBITS-1:0] t_now = t_word >> (tx_cnt - 4'd1);
    always @(posedge clk) if (!rst && past_ok && was_idle && tx_busy)
        assert (tx_tok_r <= had_tok && (!tx_key_r || had_key));
    always @(posedge clk) if (!rst && injected && tx_busy)
        assert (tx_tok_r <= TT && tx_par == t_word[0] && tx_valid && tx_data == t_now[0]);

`ifdef COVER
    // The fault model is not empty: the node rejects a copy (sequence) and a corrupted packet (parity), takes
    // a packet after one was lost on its link, and its die runs a phase on tokens after a recovery.
    reg recovered = 0;
    always @(posedge clk) if (rst) recovered <= 0; else if (recovering) recovered <= 1;
    always @(posedge clk) if (!rst) begin
        cover (w_last && !w_fresh && rx_bad_seq);
        cover (w_last && w_flipped && rx_bad_parity);
        cover (took && lost != 0 && running);
        cover (running && recovered && mode >= 2 && st[0] == 2 && need_w[0] != 0);
    end
`endif
endmodule
