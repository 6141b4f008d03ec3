//! One platform layer: what differs between systems lives in the core's
//! `platform/`, and the binary is the same code on every system.

use std::path::Path;

#[test]
fn the_binary_names_no_operating_system() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = mcpscope_layers::os_specific_uses(&src, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        found.is_empty(),
        "OS-specific code in the binary (move it behind a type in mcpscope_core::platform): {found:?}"
    );
}
