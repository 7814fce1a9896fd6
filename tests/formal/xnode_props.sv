// The compositional (assume-guarantee) proof of the token exchange: ONE exchange node with its ring's
// controller against an abstract rest of the system, checked with SymbiYosys (k-induction).
//
// `nandlab_xnode` is one PowerExchangeNode and the ring controller (PowerRing's, its node left without a
// die or a link: it never holds anything) generated from Migen (nandlab.formal_xnode.FormalXNode): the
// Verilog every exchange node and ring controller of an exchange build is made of. Its ring and the
// other rings are abstract:
//
//  * the ring's last node's sender (in_cnt, in_tok, in_key): the exchange node's incoming ring link,
//    ring.py's `_sender` exactly (a packet starts only while the ring runs and the sender is idle, key
//    first, token count MSB first, CLEAR empties it), its tokens and key chosen freely under the
//    assumption below;
//  * the ring (rring, rring_key): the tokens held, in use or in flight in the ring's nodes, except the
//    packet on the incoming link. It takes in what the exchange node's packet brings when its last bit
//    goes out (to node 0) and gives what the last node puts into a new packet;
//  * the previous exchange node's pool word (in_up = up_rx): any value, every cycle, under the
//    assumption below;
//  * everything else (others): the other rings, the other exchange nodes and their incoming links, the
//    rest of the exchange ring. It takes in this node's pool word (up_tx, which the next exchange node
//    takes in this cycle) and gives the next `in_up`;
//  * the other rings' state (hungry, others_hungry, others_reclaim) and the other dies (busy_ext): free.
//    The rings' controllers are the same Verilog with the same inputs (docs/power_proofs.md): every ring
//    clears and injects in this controller's cycle, so CLEAR empties the environment too, and INJECT puts
//    the ring's home share (`share`: any number up to TT) into the ring and TT - share into `others`.
//
// The assumptions (the contract every other component gives this one; the guarantee below and
// node_props.sv's show that each real component keeps it):
//  (A1) a packet the last node starts carries at most rring + what this node's packet brings in the same
//       cycle (a one-node ring forwards at once), and the key only if the ring has it or gets it now;
//  (A2) the next pool word carries at most others + this node's pool word (two rings: the previous
//       exchange node is also the next).
`default_nettype none

module xnode_props #(parameter ALPHA = 1, parameter TG = 4) (
    input wire clk
);
    localparam TT = ALPHA * ((1 << TG) - 1);
    localparam NBITS = 1 + $clog2(TT + 1);

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    (* anyseq *) wire apply;
    (* anyseq *) wire [2:0] req_mode;
    (* anyseq *) wire pause, busy_ext;
    (* anyseq *) wire hungry, others_hungry, others_reclaim;
    (* anyseq *) wire env_send, env_key;
    (* anyseq *) wire [7:0] env_tok, env_up, share;

    wire rx_valid, rx_data, tx_valid, tx_data, reclaim;
    wire [7:0] up_rx, up_tx, x, tx_tokens, tx_tok_r, rx_sr, give;
    wire key, tx_key, tx_key_r, tx_busy, rx_key_r, take;
    wire [3:0] tx_cnt, rx_cnt;
    wire signed [9:0] bal;
    wire running, injecting, clearing;
    wire [2:0] mode;
    wire [7:0] tt;
    wire [3:0] nbits;

    nandlab_xnode dut (
        .sys_clk(clk), .sys_rst(rst),
        .rx_valid(rx_valid), .rx_data(rx_data), .tx_valid(tx_valid), .tx_data(tx_data),
        .hungry(hungry), .up_rx(up_rx), .up_tx(up_tx), .reclaim(reclaim),
        .others_reclaim(others_reclaim), .others_hungry(others_hungry),
        .x(x), .key(key), .tx_tokens(tx_tokens), .tx_key(tx_key), .bal(bal), .give(give), .take(take),
        .tx_cnt(tx_cnt), .tx_tok_r(tx_tok_r), .tx_key_r(tx_key_r), .tx_busy(tx_busy),
        .rx_cnt(rx_cnt), .rx_sr(rx_sr), .rx_key_r(rx_key_r),
        .req_mode(req_mode), .req_tg(TG[2:0]), .req_alpha(ALPHA[3:0]), .apply(apply), .pause(pause),
        .busy_ext(busy_ext),
        .running(running), .injecting(injecting), .clearing(clearing), .mode(mode), .tt(tt), .nbits(nbits)
    );

    always @(*) assume (req_mode <= 5);

    // The ring's last node's sender (ring.py `_sender`).
    reg [3:0] in_cnt = 0;
    reg [7:0] in_tok = 0;
    reg in_key = 0;
    wire in_busy = in_cnt != 0;
    assign rx_valid = in_busy;
    assign rx_data = in_cnt == nbits ? in_key : in_tok >> (in_cnt - 1);
    wire [7:0] in_tokens = in_busy ? in_tok : 8'd0;
    wire in_key_fl = in_busy && in_key;

    // The previous exchange node's pool word, the ring, the rest of the system; the home share.
    reg [7:0] in_up = 0;
    assign up_rx = in_up;
    reg [11:0] rring = 0, others = 0;
    reg rring_key = 0;
    reg [7:0] home = 0;
    wire [7:0] out_tok = tx_cnt == 1 ? tx_tok_r : 8'd0;     // this node's packet: its last bit goes out
    wire out_key = tx_cnt == 1 && tx_key_r;
    wire env_go = running && !in_busy && env_send;
    always @(*) if (injecting) assume (share <= tt);
    always @(*) if (env_go) assume (env_tok <= rring + out_tok && (!env_key || rring_key || out_key));     // (A1)
`ifdef WEAK_ENV
    // Negative control: a previous exchange node that may put one token more into its pool word while the
    // rings run.
    always @(*) assume (env_up <= others + up_tx + running);
`else
    always @(*) assume (env_up <= others + up_tx);                                                          // (A2)
`endif
    always @(posedge clk) begin
        if (rst || clearing) begin
            in_cnt <= 0; in_tok <= 0; in_key <= 0; in_up <= 0; rring <= 0; rring_key <= 0; others <= 0; home <= 0;
        end else begin
            in_up <= env_up;
            others <= others + up_tx - env_up;
            if (injecting) begin
                rring <= share; rring_key <= 1; home <= share; others <= tt - share;
            end else begin
                if (env_go) begin in_cnt <= nbits; in_tok <= env_tok; in_key <= env_key; end
                else if (in_busy) in_cnt <= in_cnt - 1;
                rring <= rring + out_tok - (env_go ? env_tok : 8'd0);
                rring_key <= (rring_key || out_key) && !(env_go && env_key);
            end
        end
    end

    // The ring's tokens and the system's, seen from this exchange node (wide: no sum wraps).
    wire [13:0] ring_sum = rring + in_tokens + x + tx_tokens;
    wire [13:0] total = ring_sum + up_tx + in_up + others;
    wire [3:0] keys = rring_key + in_key_fl + key + tx_key;

    reg injected = 0;
    always @(posedge clk) if (rst) injected <= 0; else if (injecting) injected <= 1;
    always @(posedge clk) if (!rst && !injected)
        assert (!running && total == 0 && keys == 0 && bal == 0 && tx_cnt == 0 && rx_cnt == 0 && in_cnt == 0);
    // INJECT follows CLEAR: nothing anywhere, the links idle, nothing lent or borrowed.
    always @(posedge clk) if (!rst && injecting)
        assert (total == 0 && keys == 0 && bal == 0 && tx_cnt == 0 && rx_cnt == 0 && in_cnt == 0 &&
                tt == TT && nbits == NBITS && mode <= 5);
    always @(posedge clk) if (!rst && injected && !injecting) begin
        // (a) Global conservation: the rings, the exchange nodes and the exchange ring hold TT.
        assert (total == TT && tt == TT && nbits == NBITS);
        // One key in the ring: the key never leaves it.
        assert (keys == 1);
        // (b) The ring holds its home share + borrowed - lent (its tokens in use among them), so what
        //     it may use is what it holds; bal stays within -home .. TT - home (no wrap).
        assert ($signed({4'd0, ring_sum}) == $signed({6'd0, home}) + bal);
        assert (bal >= -$signed({2'd0, home}) && bal <= $signed({2'd0, tt}) - $signed({2'd0, home}));
    end
    always @(posedge clk) if (!rst && running) assert (mode <= 5);
    // Outside the token policies (NPM, PPM) and while the ring does not run, nothing is lent or borrowed.
    always @(posedge clk) if (!rst && (!running || mode < 2)) assert (give == 0 && !take);

    // Links: the receiver has exactly the bits the last node sent; packets fit their counters.
    always @(posedge clk) if (!rst && injected) begin
        assert (rx_cnt == (in_busy ? NBITS - in_cnt : 0));
        assert (tx_cnt <= NBITS && in_cnt <= NBITS);
        if (rx_cnt != 0) assert (rx_key_r == in_key && rx_sr == (in_tok >> in_cnt));
    end

    // (c) The guarantee the assumptions above (and node_props.sv's, for node 0) rest on: what this node
    // holds after a cycle, plus the packet it started and the pool word it sends, is exactly what it held
    // plus what it took in (the ring packet completing, the arriving pool word): so the packet it starts
    // and the pool word each carry at most that, and the key goes into a packet only if it held it or took
    // it in.
    wire [7:0] rx_done_tok = (rx_valid && rx_cnt == nbits - 1) ? {rx_sr[6:0], rx_data} : 8'd0;
    wire rx_done_key = rx_valid && rx_cnt == nbits - 1 && rx_key_r;
    reg [9:0] had_tok;
    reg had_key, was_idle, was_clear, past_ok = 0;
    always @(posedge clk) begin
        had_tok <= x + rx_done_tok + up_rx;
        had_key <= key || rx_done_key;
        was_idle <= !tx_busy;
        was_clear <= rst || clearing;
        past_ok <= 1;
    end
    wire started = was_idle && tx_busy;
    always @(posedge clk) if (!rst && past_ok && !was_clear) begin
        assert (x + (started ? tx_tok_r : 8'd0) + up_tx == had_tok);
        if (started) assert (!tx_key_r || had_key);
        if (!started) assert (key == had_key);
    end
    always @(posedge clk) if (!rst) assert (past_ok);
`ifdef LEMMA
    // Arithmetic facts, true of any values (`total` is the exact sum of its non-negative terms: 14 bits hold
    // any 2 x 12 + 5 x 8 bit sum), assumed for the solver at the wide configuration: when the system's tokens
    // add up to TT, so does none of its parts exceed it. xnode_lemma checks each on free values.
    `define LEMMA_CHECK assume
    `include "xnode_lemma.vh"
`endif
`ifdef HINTS
    // (Implied by conservation; stated for the solver at wide configurations: no 8-bit sum wraps.)
    always @(posedge clk) if (!rst) begin
        assert (x + rx_done_tok + up_rx <= TT);
        assert (x <= TT);
        assert (up_tx <= TT);
        assert (in_up <= TT);
        assert (in_tok <= TT);
        assert (tx_tok_r <= TT);
        assert (rring <= TT);
        assert (others <= TT);
        assert (home <= TT);
    end
`endif

`ifdef COVER
    // The environment is not too narrow: this ring lends (gives to the pool), borrows (takes a non-empty
    // pool word), and holds more than its home share (borrowed tokens in it), in a token policy.
    always @(posedge clk) if (!rst) begin
        cover (running && mode >= 2 && give != 0);
        cover (running && mode >= 2 && take && up_rx != 0);
        cover (running && mode >= 2 && ring_sum > home && tx_busy);
        cover (running && mode >= 2 && reclaim && bal < 0);
    end
`endif
endmodule
