// Formal properties of the token exchange (gateware/power/exchange.py), checked with SymbiYosys.
//
// `nandlab_exchange` is RINGS rings of PER_RING nodes (fixed token table, TG = 4) with an exchange node
// each, generated from Migen (nandlab.formal_exchange). Every node's die is free, as in ring_props.sv:
// it starts any operation at any time, presents OI for each phase until OE, runs each phase for any
// number of cycles. The configuration asks for any policy at any time (apply), TG = 4, alpha = ALPHA:
// the global budget, TT = ALPHA x 15 tokens, which the rings share.
`default_nettype none

module exchange_props #(parameter RINGS = 2, parameter PER_RING = 1, parameter ALPHA = 1) (
    input wire clk
);
    localparam NODES = RINGS * PER_RING;
    localparam TT = ALPHA * 15;

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    (* anyseq *) wire [NODES-1:0] start;
    (* anyseq *) wire [NODES*2-1:0] opsel;
    (* anyseq *) wire [NODES-1:0] finish;
    (* anyseq *) wire apply;
    (* anyseq *) wire [2:0] req_mode;
    (* anyseq *) wire pause;

    // Operations and the token table as in ring_props.sv.
    `include "ring_ops.vh"

    wire [NODES-1:0] request, oi_first, phase_end, atomic_end, oe;
    wire [NODES*8-1:0] oi, ht, ut, tx_tokens;
    wire [NODES-1:0] key, key_used, tx_key, in_atomic, req_q, tx_key_r, tx_busy, rx_key_r, ppz_q, oe_q;
    wire [NODES*8-1:0] rt_q;
    wire [NODES*4-1:0] tx_cnt, rx_cnt;
    wire [NODES*8-1:0] tx_tok_r, rx_sr;
    wire [RINGS*4-1:0] x_tx_cnt, x_rx_cnt;
    wire [RINGS*8-1:0] x_tx_tok_r, x_rx_sr;
    wire [RINGS-1:0] x_tx_key_r, x_tx_busy, x_rx_key_r;
    wire [RINGS*8-1:0] x_x, x_tx_tokens, x_up_tx;
    wire [RINGS-1:0] x_key, x_tx_key;
    wire [RINGS*10-1:0] x_bal;
    wire running, running_all;
    wire [RINGS*5-1:0] ring_state;
    wire [RINGS*3-1:0] ring_mode;
    wire [RINGS*8-1:0] ring_tt;
    wire [RINGS*4-1:0] ring_nbits;
    wire [2:0] mode;
    wire [7:0] tt;
    wire [3:0] nbits;

    nandlab_exchange dut (
        .sys_clk(clk), .sys_rst(rst),
        .request(request), .oi(oi), .oi_first(oi_first), .phase_end(phase_end), .atomic_end(atomic_end),
        .oe(oe), .ht(ht), .ut(ut), .key(key), .key_used(key_used), .tx_tokens(tx_tokens), .tx_key(tx_key),
        .in_atomic(in_atomic), .req_q(req_q), .tx_cnt(tx_cnt), .rx_cnt(rx_cnt), .tx_tok_r(tx_tok_r),
        .tx_key_r(tx_key_r), .tx_busy(tx_busy), .rx_sr(rx_sr), .rx_key_r(rx_key_r),
        .rt_q(rt_q), .ppz_q(ppz_q), .oe_q(oe_q),
        .x_tx_cnt(x_tx_cnt), .x_rx_cnt(x_rx_cnt), .x_tx_tok_r(x_tx_tok_r), .x_tx_key_r(x_tx_key_r),
        .x_tx_busy(x_tx_busy), .x_rx_sr(x_rx_sr), .x_rx_key_r(x_rx_key_r), .ring_state(ring_state),
        .ring_mode(ring_mode), .ring_tt(ring_tt), .ring_nbits(ring_nbits),
        .x_x(x_x), .x_tx_tokens(x_tx_tokens), .x_up_tx(x_up_tx), .x_key(x_key), .x_tx_key(x_tx_key), .x_bal(x_bal),
        .req_mode(req_mode), .req_tg(3'd4), .req_alpha(ALPHA[3:0]), .apply(apply), .pause(pause),
        .running(running), .running_all(running_all), .mode(mode), .tt(tt), .nbits(nbits)
    );

    // Dies.
    reg [1:0] st [0:NODES-1];      // 0 idle, 1 request, 2 run
    reg [1:0] op [0:NODES-1];
    reg [2:0] ph [0:NODES-1];
    wire [7:0] need_w [0:NODES-1];
    genvar i;
    generate for (i = 0; i < NODES; i = i + 1) begin : die
        wire last = (st[i] == 2) && finish[i];
        wire more = ph[i] + 1 < nphases(op[i]);
        assign request[i]    = st[i] == 1;
        assign oi[i*8 +: 8]  = st[i] == 0 ? 8'd0 : oi_of(op[i], ph[i]);
        assign oi_first[i]   = st[i] != 0 && first_of(op[i], ph[i]);
        assign phase_end[i]  = last;
        assign atomic_end[i] = last && (!more || first_of(op[i], ph[i] + 1));
        always @(posedge clk) begin
            if (rst) begin
                st[i] <= 0; op[i] <= 0; ph[i] <= 0;
            end else begin
                case (st[i])
                    0: if (start[i] && opsel[i*2 +: 2] != 3) begin
                           st[i] <= 1; op[i] <= opsel[i*2 +: 2]; ph[i] <= 0;
                       end
                    1: if (oe[i]) st[i] <= 2;
                    2: if (last) begin
                           if (more) begin st[i] <= 1; ph[i] <= ph[i] + 1; end
                           else st[i] <= 0;
                       end
                endcase
            end
        end
        wire [2:0] ph_first = (op[i] == 0 && ph[i] >= 3) ? 3'd3 : 3'd0;
        assign need_w[i] = (st[i] != 2 || mode < 2) ? 8'd0 :
                           (mode == 4) ? rt_of(oi_of(op[i], ph[i])) : rt_of(oi_of(op[i], ph_first));
    end endgenerate

    // Global sums: ring nodes (held, in flight, in use), exchange nodes (held, in flight on the ring
    // link, on the exchange ring); keys per ring.
    integer n, r;
    reg [11:0] held, flying, used, needed;
    reg [3:0] keys [0:RINGS-1];
    reg keys_ok;
    always @(*) begin
        held = 0; flying = 0; used = 0; needed = 0;
        for (r = 0; r < RINGS; r = r + 1) begin
            keys[r] = x_key[r] + x_tx_key[r];
            held = held + x_x[r*8 +: 8];
            flying = flying + x_tx_tokens[r*8 +: 8] + x_up_tx[r*8 +: 8];
        end
        for (n = 0; n < NODES; n = n + 1) begin
            needed = needed + need_w[n];
            held = held + ht[n*8 +: 8];
            flying = flying + tx_tokens[n*8 +: 8];
            used = used + ut[n*8 +: 8];
            keys[n / PER_RING] = keys[n / PER_RING] + key[n] + tx_key[n] + key_used[n];
        end
        keys_ok = 1;
        for (r = 0; r < RINGS; r = r + 1) keys_ok = keys_ok && keys[r] == 1;
    end

    always @(*) assume (req_mode <= 5);

    // The rings change state together (one apply, one drain): all run or none does.
    always @(posedge clk) if (!rst) assert (running == running_all);

    always @(posedge clk) if (!rst && running) begin
        // Global conservation: no token created or lost, whatever moves between the rings.
        assert (held + flying + used == TT);
        assert (keys_ok);
        // The phases running anywhere together need at most the global budget.
        assert (needed <= TT);
        assert (tt == TT && mode <= 5);
    end

    generate for (i = 0; i < NODES; i = i + 1) begin : node_props
        always @(posedge clk) if (!rst && running) begin
            // Every running phase is covered by its node's tokens in use.
            assert (need_w[i] <= ut[i*8 +: 8]);
            if (st[i] == 0) assert (ut[i*8 +: 8] == 0);
        end
    end endgenerate

`ifdef STRENGTHEN
    // Invariants that make the properties inductive (as in ring_props.sv): the die model's states, the
    // nodes' view of their dies, and on every link the receiver holds exactly the bits sent so far of
    // the packet in flight (ring k: its node(s), then exchange node k, then back to its node 0).
    localparam NBITS = 1 + $clog2(TT + 1);
    integer q;
    // The rings move together and hold one configuration (one apply latched by all at CLEAR).
    always @(posedge clk) if (!rst) for (q = 1; q < RINGS; q = q + 1)
        assert (ring_state[q*5 +: 5] == ring_state[4:0] && ring_mode[q*3 +: 3] == ring_mode[2:0] &&
                ring_tt[q*8 +: 8] == ring_tt[7:0] && ring_nbits[q*4 +: 4] == ring_nbits[3:0]);
    // INJECT (ring_state bit 4) follows CLEAR: nothing held, flying or in use anywhere, no key.
    reg nokeys;
    always @(*) begin
        nokeys = 1;
        for (q = 0; q < RINGS; q = q + 1) nokeys = nokeys && keys[q] == 0;
    end
    always @(posedge clk) if (!rst && ring_state[4]) assert (held + flying + used == 0 && nokeys && tt == TT && nbits == NBITS && mode <= 5);
    // Last cycle's OI per die (the registered look-ups below).
    reg [7:0] prev_oi [0:NODES-1];
    reg past_ok = 0;
    always @(posedge clk) begin
        past_ok <= 1;
        for (q = 0; q < NODES; q = q + 1) prev_oi[q] <= oi[q*8 +: 8];
    end
    always @(posedge clk) if (!rst) assert (past_ok);
    // INJECT follows DRAIN and CLEAR (ring_state bits 3, 4): the exchange nodes' links are empty at INJECT.
    generate for (i = 0; i < RINGS; i = i + 1) begin : strengthen_x
        always @(posedge clk) if (!rst && ring_state[4])
            assert (x_tx_cnt[i*4 +: 4] == 0 && x_rx_cnt[i*4 +: 4] == 0);
    end endgenerate
    generate for (i = 0; i < NODES; i = i + 1) begin : strengthen
        localparam K = i / PER_RING;
        always @(posedge clk) if (!rst) begin
            assert (st[i] != 3 && op[i] != 3 && ph[i] < nphases(op[i]));
            assert (in_atomic[i] == (st[i] == 2 || (st[i] == 1 && !oi_first[i])));
        end
        // As in ring_props.sv: no die inside an atomic operation and no grant pending in CLEAR and INJECT;
        // at INJECT the node's links are empty and no request is registered.
        always @(posedge clk) if (!rst && (ring_state[3] || ring_state[4])) assert (!in_atomic[i] && !oe_q[i]);
        always @(posedge clk) if (!rst && ring_state[4])
            assert (tx_cnt[i*4 +: 4] == 0 && rx_cnt[i*4 +: 4] == 0 && !req_q[i]);
        always @(posedge clk) if (!rst && running) begin
            // As in ring_props.sv: the comparator's registers are last cycle's look-ups of the OI; a
            // registered request is the die's first phase still presented; a later phase presented is
            // covered already (its own RT in KMTPM sub-atomic, the atomic operation's first RT otherwise).
            if (past_ok) assert (rt_q[i*8 +: 8] == rt_of(prev_oi[i]) && ppz_q[i] == (prev_oi[i] == 8'h11));
            if (req_q[i]) assert (st[i] == 1 && oi_first[i] && oi[i*8 +: 8] == prev_oi[i]);
            if (st[i] == 1 && !oi_first[i] && mode >= 2)
                assert (ut[i*8 +: 8] >= (mode == 4 ? rt_of(oi[i*8 +: 8]) :
                                         rt_of(oi_of(op[i], (op[i] == 0 && ph[i] >= 3) ? 3'd3 : 3'd0))));
            if (st[i] == 0 || (st[i] == 1 && oi_first[i] && !oe[i])) assert (ut[i*8 +: 8] == 0);
            if (st[i] == 1 && oi_first[i] && oe[i] && mode >= 2) assert (ut[i*8 +: 8] >= rt_of(oi[i*8 +: 8]));
            if (mode < 2) assert (ut[i*8 +: 8] == 0);
            if (key_used[i]) assert (mode == 1 && oi[i*8 +: 8] == 8'h11 && (st[i] == 2 || (st[i] == 1 && oe[i])));
            assert (tx_cnt[i*4 +: 4] <= NBITS && nbits == NBITS);
            // Node i receives from the previous node of its ring, or (its ring's first) from exchange node K.
            if (i % PER_RING == 0) begin
                assert (rx_cnt[i*4 +: 4] == (x_tx_busy[K] ? NBITS - x_tx_cnt[K*4 +: 4] : 0));
                if (rx_cnt[i*4 +: 4] != 0) assert (rx_key_r[i] == x_tx_key_r[K] &&
                                                   rx_sr[i*8 +: 8] == (x_tx_tok_r[K*8 +: 8] >> x_tx_cnt[K*4 +: 4]));
            end else begin
                assert (rx_cnt[i*4 +: 4] == (tx_busy[i-1] ? NBITS - tx_cnt[(i-1)*4 +: 4] : 0));
                if (rx_cnt[i*4 +: 4] != 0) assert (rx_key_r[i] == tx_key_r[i-1] &&
                                                   rx_sr[i*8 +: 8] == (tx_tok_r[(i-1)*8 +: 8] >> tx_cnt[(i-1)*4 +: 4]));
            end
            // Exchange node K receives from its ring's last node.
            if (i % PER_RING == PER_RING - 1) begin
                assert (x_tx_cnt[K*4 +: 4] <= NBITS);
                assert (x_rx_cnt[K*4 +: 4] == (tx_busy[i] ? NBITS - tx_cnt[i*4 +: 4] : 0));
                if (x_rx_cnt[K*4 +: 4] != 0) assert (x_rx_key_r[K] == tx_key_r[i] &&
                                                     x_rx_sr[K*8 +: 8] == (tx_tok_r[i*8 +: 8] >> tx_cnt[i*4 +: 4]));
            end
        end
    end endgenerate
`endif

`ifdef LOAN_COVER
    // A loan in use: a die of the last ring runs a pre-charge (RT 15 = TT) with tokens of ring 0's share.
    always @(posedge clk) if (!rst)
        cover (running && mode >= 2 && mode <= 4 && need_w[NODES-1] == TT && TT > 0);
`endif

`ifdef REFINE
    // The abstractions of the compositional proof (xnode_props.sv and node_props.sv with EXCHANGE) checked on
    // the real rings from reset: for exchange node K, its ring (`rring`: the ring's nodes but the packet on
    // the link into K), the previous exchange node's pool word and everything else (`others`) move only as
    // xnode_props.sv's environment may, and so does `rest` for each ring's node 0, whose predecessor is the
    // exchange node (docs/power_proofs.md, the token exchange).
    wire [11:0] total_all = held + flying + used;
    wire quiet = ring_state[3] || ring_state[4];        // CLEAR, INJECT (the rings move together: below)
    reg prev_ok = 0, prev_quiet = 1;
    always @(posedge clk) begin prev_ok <= !rst; prev_quiet <= rst || quiet; end
    integer s;
    always @(posedge clk) if (!rst) for (s = 1; s < RINGS; s = s + 1)
        assert (ring_state[s*5 +: 5] == ring_state[4:0]);
    generate for (i = 0; i < RINGS; i = i + 1) begin : refine
        localparam F = i * PER_RING, L = F + PER_RING - 1, P = (i + RINGS - 1) % RINGS;
        reg [11:0] ring_nodes;
        integer m;
        always @(*) begin
            ring_nodes = 0;
            for (m = F; m <= L; m = m + 1) ring_nodes = ring_nodes + ht[m*8 +: 8] + ut[m*8 +: 8] + tx_tokens[m*8 +: 8];
        end
        wire [11:0] rring = ring_nodes - tx_tokens[L*8 +: 8];
        wire [11:0] others = total_all - ring_nodes - x_x[i*8 +: 8] - x_tx_tokens[i*8 +: 8] - x_up_tx[i*8 +: 8] -
                             x_up_tx[P*8 +: 8];
        wire [11:0] rest0 = total_all - ht[F*8 +: 8] - ut[F*8 +: 8] - tx_tokens[F*8 +: 8] - x_tx_tokens[i*8 +: 8];
        wire [7:0] out_x = x_tx_cnt[i*4 +: 4] == 1 ? x_tx_tok_r[i*8 +: 8] : 8'd0;
        wire [7:0] out_0 = tx_cnt[F*4 +: 4] == 1 ? tx_tok_r[F*8 +: 8] : 8'd0;
        reg [11:0] rring_q, others_q, rest0_q;
        reg [7:0] out_x_q, out_0_q, up_q;
        reg idle_l, idle_x;
        always @(posedge clk) begin
            rring_q <= rring; others_q <= others; rest0_q <= rest0; out_x_q <= out_x; out_0_q <= out_0;
            up_q <= x_up_tx[i*8 +: 8]; idle_l <= !tx_busy[L]; idle_x <= !x_tx_busy[i];
        end
        wire [7:0] new_l = idle_l && tx_busy[L] ? tx_tok_r[L*8 +: 8] : 8'd0;     // the last node's new packet
        wire [7:0] new_x = idle_x && x_tx_busy[i] ? x_tx_tok_r[i*8 +: 8] : 8'd0; // exchange node's, into node 0
        always @(posedge clk) if (!rst && prev_ok && !prev_quiet) begin
            // (A1) and the ring's step.
            assert (new_l <= rring_q + out_x_q && rring == rring_q + out_x_q - new_l);
            // (A2) and the rest of the system's step.
            assert (x_up_tx[P*8 +: 8] <= others_q + up_q && others == others_q + up_q - x_up_tx[P*8 +: 8]);
            // node_props.sv's assumption for node 0, whose predecessor is the exchange node, and its rest's step.
            assert (new_x <= rest0_q + out_0_q && rest0 == rest0_q + out_0_q - new_x);
        end
    end endgenerate
`endif
endmodule
