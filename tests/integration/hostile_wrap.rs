//! Hostile peers, round three: wrap/unwrap of client configs: no litter, lost ledgers.
//! Each test fails without the fix it guards.
