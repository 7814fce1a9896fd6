// The proofs' operations and their fixed token table, included inside ring_props.sv and
// exchange_props.sv (tests/test_formal.py checks this table against the token compiler's).
// Operations: 0 program loop (P_A1 3 phases, P_A2 3), 1 read execution (R_A2, 4), 2 erase
// execution (E_A1, 5); OI = atomic id << 4 | sub-atomic index.
function [7:0] oi_of(input [1:0] op, input [2:0] k);
    oi_of = op == 0 ? ((k < 3) ? (8'h11 + k) : (8'h21 + k - 3)) : op == 1 ? 8'h41 + k : 8'h61 + k;
endfunction
function [2:0] nphases(input [1:0] op);
    nphases = op == 0 ? 6 : op == 1 ? 4 : 5;
endfunction
function first_of(input [1:0] op, input [2:0] k);
    first_of = (k == 0) || (op == 0 && k == 3);
endfunction
// The token table, written independently of the token compiler (TG = 4, eq. 1 on the default
// waveforms' sub-atomic peaks).
function [7:0] rt_of(input [7:0] oi);
    // (A chain of conditions: a case table would become a ROM the induction could not trust.)
    rt_of = oi == 8'h11 ? 15 : oi == 8'h12 ? 8 : oi == 8'h13 ? 2 :
            oi == 8'h21 ? 7  : oi == 8'h22 ? 5 : oi == 8'h23 ? 2 :
            oi == 8'h41 ? 13 : oi == 8'h42 ? 9 : oi == 8'h43 ? 6 : oi == 8'h44 ? 3 :
            oi == 8'h61 ? 11 : oi == 8'h62 ? 9 : oi == 8'h63 ? 7 : oi == 8'h64 ? 5 : oi == 8'h65 ? 3 : 0;
endfunction
