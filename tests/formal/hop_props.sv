// The fault model of pnode_props.sv checked against the real fault injector (ringfault.py RingHopFault),
// bounded from reset: whatever the injector is armed with, whenever, every packet that leaves the hop is one
// pnode_props.sv's abstract link may deliver.
//
// Upstream is a protected sender exactly like ring.py's `_sender` (a packet starts only when the sender is
// idle; key, token count MSB first, sequence bit toggled at every packet, parity), with any token counts and
// keys. Downstream, each packet (NBITS contiguous bits) is checked to be
//   - an original: within one bit of the LATEST packet the sender had started before the packet's first bit
//     came out, and that original not delivered before (the abstract link's waiting packet or new one, as
//     sent or with one bit inverted); or
//   - a copy: bit for bit the packet before it on the hop.
// Originals never delivered are the abstract link's drops. `clr` (the ring's CLEAR) empties everything.
`default_nettype none

module hop_props #(parameter ALPHA = 1, parameter TG = 4) (
    input wire clk
);
    localparam TT = ALPHA * ((1 << TG) - 1);
    localparam TBITS = $clog2(TT + 1);
    localparam NBITS = TBITS + 3;

    reg rst = 1;
    always @(posedge clk) rst <= 0;

    (* anyseq *) wire s_go, s_key, arm, clr;
    (* anyseq *) wire [7:0] s_tok_in;
    (* anyseq *) wire [1:0] kind;
    (* anyseq *) wire [3:0] pos;
    always @(*) assume (s_tok_in <= TT);

    // The sender.
    reg [3:0] s_cnt = 0;
    reg [7:0] s_tok = 0;
    reg s_key_r = 0, s_seq = 0;
    wire s_busy = s_cnt != 0;
    wire [TBITS-1:0] s_tb = s_tok[TBITS-1:0];
    wire [NBITS-1:0] s_word = {s_key_r, s_tb, s_seq, s_key_r ^ s_seq ^ (^s_tb)};
    wire [NBITS-1:0] s_now = s_word >> (s_cnt - 4'd1);
    wire up_valid = s_busy;
    wire up_data = s_busy && s_now[0];
    wire start = !clr && !s_busy && s_go;
    wire [TBITS-1:0] n_tb = s_tok_in[TBITS-1:0];
    wire [NBITS-1:0] n_word = {s_key, n_tb, !s_seq, s_key ^ !s_seq ^ (^n_tb)};

    wire dn_valid, dn_data, pending, delaying;
    nandlab_hop dut (
        .sys_clk(clk), .sys_rst(rst),
        .up_valid(up_valid), .up_data(up_data), .dn_valid(dn_valid), .dn_data(dn_data),
        .nbits(NBITS[3:0]), .arm(arm), .kind(kind), .pos(pos), .clear(clr),
        .pending(pending), .delaying(delaying)
    );

    // The latest original started (L_*), the candidate for the packet coming out (cand_*), the packet before.
    reg [NBITS-1:0] L_word = 0, cand_word = 0, d_word = 0, last_R = 0;
    reg [3:0] L_id = 0, cand_id = 0, d_cnt = 0;
    reg L_used = 1, cand_ok = 0, last_ok = 0;
    wire first = dn_valid && d_cnt == 0;
    wire done = dn_valid && d_cnt == NBITS - 1;
    wire [NBITS-1:0] R = {d_word[NBITS-2:0], dn_data};
    wire [NBITS-1:0] diff = R ^ cand_word;
    wire one_or_none = (diff & (diff - 1'b1)) == 0;
    wire match_orig = cand_ok && one_or_none;
    wire match_copy = last_ok && R == last_R;

    always @(posedge clk) begin
        if (rst || clr) begin
            s_cnt <= 0; s_seq <= 0; L_used <= 1; cand_ok <= 0; last_ok <= 0; d_cnt <= 0;
        end else begin
            if (start) begin
                s_cnt <= NBITS; s_tok <= s_tok_in; s_key_r <= s_key; s_seq <= !s_seq;
                L_word <= n_word; L_id <= L_id + 1'b1; L_used <= 0;
            end else if (s_busy) s_cnt <= s_cnt - 1'b1;
            if (first) begin cand_word <= L_word; cand_id <= L_id; cand_ok <= !L_used; end
            if (dn_valid) begin
                d_cnt <= done ? 4'd0 : d_cnt + 1'b1;
                d_word <= {d_word[NBITS-2:0], dn_data};
            end
            if (done) begin
                last_R <= R; last_ok <= 1;
                if (match_orig && cand_id == L_id && !start) L_used <= 1;
            end
        end
    end

    always @(posedge clk) if (!rst && !clr) begin
        // Packets come out whole: NBITS bits, one a cycle.
        if (d_cnt != 0) assert (dn_valid);
        // Each is an original (at most one bit inverted) or a copy of the one before.
`ifdef NO_COPY
        // Negative control: a link model without copies does not cover the injector (must fail).
        if (done) assert (match_orig);
`else
        if (done) assert (match_orig || match_copy);
`endif
    end

`ifdef COVER
    // The injector's three faults are seen: a copy, an original with a bit inverted, an original after a lost
    // one, and an original delayed behind a copy.
    reg lost_one = 0;
    always @(posedge clk) if (rst || clr) lost_one <= 0; else if (start && !L_used) lost_one <= 1;
    always @(posedge clk) if (!rst && !clr) begin
        cover (done && match_copy && !match_orig);
        cover (done && match_orig && diff != 0);
        cover (done && match_orig && lost_one);
        cover (done && match_orig && delaying);
    end
`endif
endmodule
