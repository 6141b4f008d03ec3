//! Hostile peers, round three: input that is too deep or too large: nested filter expressions, huge durations, huge load sizes.
//! Each test fails without the fix it guards.
