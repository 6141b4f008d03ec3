//! Hostile peers, round three: the reverse proxy against a hostile upstream: endless and huge SSE events.
//! Each test fails without the fix it guards.
