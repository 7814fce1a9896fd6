// Arithmetic lemmas of the exchange node's proof at wide configurations (included by xnode_props.sv with
// LEMMA as assumptions, and by xnode_lemma.sv as assertions on free values: each holds for any values of
// its terms). `total` and `ring_sum` are exact sums (no wrap), so when `total` is TT each part is at most TT.
always @(*) if (total == TT) begin
    `LEMMA_CHECK (x + in_tokens + in_up <= TT);
    `LEMMA_CHECK (ring_sum <= TT && rring <= TT && others <= TT && in_tokens <= TT);
    `LEMMA_CHECK (x <= TT && tx_tokens <= TT && up_tx <= TT && in_up <= TT);
    `LEMMA_CHECK (ring_sum + up_tx <= TT && rring + tx_tokens <= TT && others + up_tx <= TT);
end
