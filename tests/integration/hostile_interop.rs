//! Hostile peers, round three: imports and exports of hostile or huge files: streaming, checked arithmetic, bounded memory.
//! Each test fails without the fix it guards.
