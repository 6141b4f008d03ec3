//! Hostile peers, round three: output files: devices, pipes, symlinks planted by others, and every flag that writes a file.
//! Each test fails without the fix it guards.
