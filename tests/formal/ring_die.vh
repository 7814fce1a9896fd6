// The free dies of the ring's proofs and their strengthening registers, included inside ring_props.sv and
// node_props.sv (after their ports and the ring's buses: NODES dies, one per node). Each die starts any
// operation at any time, presents OI for each phase until OE, runs each phase for any number of cycles (at
// most RUN_MAX when BOUNDED_RUN is defined) and signals phase_end / atomic_end like nand_model/current.py.
    // Dies.
    reg [1:0] st [0:NODES-1];      // 0 idle, 1 request, 2 run
    reg [1:0] op [0:NODES-1];
    reg [2:0] ph [0:NODES-1];
    reg [2:0] len [0:NODES-1];     // Cycles run in this phase
    reg [7:0] waited [0:NODES-1];  // Consecutive cycles at a first-phase request
    wire [7:0] need_w [0:NODES-1]; // Tokens the phase running on each die needs
    genvar i;
    generate for (i = 0; i < NODES; i = i + 1) begin : die
        wire last = (st[i] == 2) && (finish[i]
`ifdef BOUNDED_RUN
                                      || len[i] == RUN_MAX - 1
`endif
                                     );
        wire more = ph[i] + 1 < nphases(op[i]);
        assign request[i]    = st[i] == 1;
        assign oi[i*8 +: 8]  = st[i] == 0 ? 8'd0 : oi_of(op[i], ph[i]);
        assign oi_first[i]   = st[i] != 0 && first_of(op[i], ph[i]);
        assign phase_end[i]  = last;
        assign atomic_end[i] = last && (!more || first_of(op[i], ph[i] + 1));
        always @(posedge clk) begin
            if (rst) begin
                st[i] <= 0; op[i] <= 0; ph[i] <= 0; len[i] <= 0; waited[i] <= 0;
            end else begin
                case (st[i])
                    0: if (start[i] && opsel[i*2 +: 2] != 3) begin
                           st[i] <= 1; op[i] <= opsel[i*2 +: 2]; ph[i] <= 0;
                       end
                    1: if (oe[i]) begin st[i] <= 2; len[i] <= 0; end
                    2: begin
`ifdef BOUNDED_RUN
                           len[i] <= len[i] + 1;
`endif
                           if (last) begin
                               if (more) begin st[i] <= 1; ph[i] <= ph[i] + 1; end
                               else st[i] <= 0;
                           end
                       end
                endcase
`ifdef LIVENESS
                waited[i] <= (running && st[i] == 1 && oi_first[i] && !oe[i]) ?
                             (waited[i] == 8'hff ? 8'hff : waited[i] + 1) : 0;
`endif
            end
        end
        // The tokens a running phase needs: its own RT (KMTPM sub-atomic) or its atomic
        // operation's, taken by the first phase (other token policies).
        wire [2:0] ph_first = (op[i] == 0 && ph[i] >= 3) ? 3'd3 : 3'd0;
        assign need_w[i] = (st[i] != 2 || mode < 2) ? 8'd0 :
                           (mode == 4) ? rt_of(oi_of(op[i], ph[i])) : rt_of(oi_of(op[i], ph_first));
    end endgenerate

    // Last cycle's OI per die (the strengthening below).
    reg [7:0] prev_oi [0:NODES-1];
    reg past_ok = 0;
    integer m;
    always @(posedge clk) begin
        past_ok <= 1;
        for (m = 0; m < NODES; m = m + 1) prev_oi[m] <= oi[m*8 +: 8];
    end
    always @(posedge clk) if (!rst) assert (past_ok);

