//! #33: the Debian package, built by `scripts/package-deb` (cargo-deb) from
//! the binary under test: what it installs, that its menu entry is valid
//! (desktop-file-validate), that apt can resolve its dependencies, and that
//! the installed files work (the binary, the man page, the completions).

use crate::support::*;
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_debian_package_installs_a_working_app_with_its_menu_entry() {
    let dir = tempfile::tempdir().unwrap();
    // The binary under test (target/debug): packaged as built, not rebuilt.
    assert!(bin().ends_with("debug/mcpscope"), "{}", bin().display());
    run(Command::new(repo().join("scripts/package-deb"))
        .args(["-o"])
        .arg(dir.path())
        .env("PROFILE", "dev")
        .env("NO_BUILD", "1")
        .env("CARGO_TARGET_DIR", bin().parent().unwrap().parent().unwrap()));
    let deb = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .expect("a .deb was written");

    let info = run(Command::new("dpkg-deb").arg("--info").arg(&deb));
    assert!(info.contains("Package: mcpscope"), "{info}");
    assert!(info.contains("Section: devel"), "{info}");
    // Libraries the app loads at run time, which `$auto` cannot see.
    for dep in ["libc6", "libxkbcommon-x11-0", "libegl1", "libvulkan1"] {
        assert!(info.contains(dep), "Depends lacks {dep}: {info}");
    }
    // apt resolves every dependency from the distribution (simulated: nothing installed).
    let simulated = run(Command::new("apt-get").args(["install", "-s"]).arg(&deb));
    assert!(
        simulated.contains("Inst mcpscope") || simulated.contains("Conf mcpscope"),
        "{simulated}"
    );

    let root = dir.path().join("root");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    let installed = |p: &str| root.join(p);
    let version = run(Command::new(installed("usr/bin/mcpscope")).arg("--version"));
    assert!(version.starts_with("mcpscope "), "{version}");

    let desktop = installed("usr/share/applications/mcpscope.desktop");
    run(Command::new("desktop-file-validate").arg(&desktop));
    let entry = std::fs::read_to_string(&desktop).unwrap();
    assert!(
        entry.contains("Exec=mcpscope\n") && entry.contains("Icon=mcpscope\n"),
        "{entry}"
    );
    // The icon the entry names, at the size and in the theme it is looked up in.
    let png = std::fs::read(installed("usr/share/icons/hicolor/256x256/apps/mcpscope.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 256, "width");
    assert!(installed("usr/share/icons/hicolor/scalable/apps/mcpscope.svg").is_file());

    // The man page renders, and names a subcommand.
    let man = installed("usr/share/man/man1/mcpscope.1.gz");
    let page = run(Command::new("man")
        .arg("-l")
        .arg(&man)
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0"));
    assert!(page.contains("mcpscope") && page.contains("call"), "{page}");

    // The bash completion registers for the installed command.
    let bash = installed("usr/share/bash-completion/completions/mcpscope");
    let registered =
        run(Command::new("bash").args(["-c", &format!("source {} && complete -p mcpscope", bash.display())]));
    assert!(registered.contains("mcpscope"), "{registered}");
    for f in [
        "usr/share/zsh/vendor-completions/_mcpscope",
        "usr/share/fish/vendor_completions.d/mcpscope.fish",
        "usr/share/doc/mcpscope/copyright",
    ] {
        assert!(is_nonempty(&installed(f)), "{f}");
    }
}

fn is_nonempty(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.len() > 0)
}
