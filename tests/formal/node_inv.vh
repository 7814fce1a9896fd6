// The per-node invariants of the ring's proofs (docs/power_proofs.md, 3 and 6-8), included inside a
// generate loop over node i by ring_props.sv and node_props.sv (after ring_die.vh). The links' invariant
// (5) is stated by each file, whose predecessors differ.
// INJECT follows DRAIN and CLEAR: no die inside an atomic operation, links empty, no request
// registered or granted.
always @(posedge clk) if (!rst && (clearing || injecting)) assert (!in_atomic[i] && !oe_q[i]);
always @(posedge clk) if (!rst && injecting)
    assert (!in_atomic[i] && tx_cnt[i*4 +: 4] == 0 && rx_cnt[i*4 +: 4] == 0 && !req_q[i] && !oe_q[i]);
// The die model stays in its own states.
always @(posedge clk) if (!rst) assert (st[i] != 3 && op[i] != 3 && ph[i] < nphases(op[i]));
// Whatever the ring does, its node knows when its die is inside an atomic operation.
always @(posedge clk) if (!rst)
    assert (in_atomic[i] == (st[i] == 2 || (st[i] == 1 && !oi_first[i])));
always @(posedge clk) if (!rst && running) begin
    assert (need_w[i] <= ut[i*8 +: 8]);
    // (Strengthening for the induction: the comparator's registers are last cycle's look-ups
    // of the OI; a registered request is the die's first phase still presented.)
    if (past_ok) assert (rt_q[i*8 +: 8] == rt_of(prev_oi[i]) && ppz_q[i] == (prev_oi[i] == 8'h11));
    if (req_q[i]) assert (st[i] == 1 && oi_first[i] && oi[i*8 +: 8] == prev_oi[i]);
    // A later phase presented is covered already: by its own RT in KMTPM sub-atomic (RTs do not
    // rise inside an atomic operation), by the atomic operation's first RT otherwise.
    if (st[i] == 1 && !oi_first[i] && mode >= 2)
        assert (ut[i*8 +: 8] >= (mode == 4 ? rt_of(oi[i*8 +: 8]) :
                                 rt_of(oi_of(op[i], (op[i] == 0 && ph[i] >= 3) ? 3'd3 : 3'd0))));
    // A node uses tokens only inside an atomic operation of its die.
    // (Granted tokens are in use from the cycle OE is high.)
    if (st[i] == 0 || (st[i] == 1 && oi_first[i] && !oe[i])) assert (ut[i*8 +: 8] == 0);
    if (st[i] == 1 && oi_first[i] && oe[i] && mode >= 2) assert (ut[i*8 +: 8] >= rt_of(oi[i*8 +: 8]));
    if (mode < 2) assert (ut[i*8 +: 8] == 0);
    // The key is in use only by a die in PPM's peak-power zone.
    if (key_used[i]) assert (mode == 1 && oi[i*8 +: 8] == 8'h11 && (st[i] == 2 || (st[i] == 1 && oe[i])));
end
