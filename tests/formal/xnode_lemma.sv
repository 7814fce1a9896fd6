// xnode_lemma.vh's arithmetic facts checked on free values (any value of every term, widths as in
// xnode_props.sv): xnode_props.sv with LEMMA assumes them, which is sound because they hold for all values.
`default_nettype none

module xnode_lemma #(parameter ALPHA = 8, parameter TG = 5) (
    input wire clk
);
    localparam TT = ALPHA * ((1 << TG) - 1);
    (* anyconst *) wire [11:0] rring, others;
    (* anyconst *) wire [7:0] in_tokens, x, tx_tokens, up_tx, in_up;
    // As in xnode_props.sv.
    wire [13:0] ring_sum = rring + in_tokens + x + tx_tokens;
    wire [13:0] total = ring_sum + up_tx + in_up + others;
    `define LEMMA_CHECK assert
    `include "xnode_lemma.vh"
endmodule
