//! Hostile peers, round three: our listeners and load against hostile servers and clients: wrong ids, bursts, empty Host.
//! Each test fails without the fix it guards.
