//! Cargo runs build.rs again once clang is installed (build_support.rs): a tiny package whose
//! build script uses the same lookup, built with a search path that lacks the program, again
//! unchanged, then after the program appears in it. Each run of its build script appends
//! what it found to a log. (ccfair-emu's own build script compiles the BPF programs, which
//! would make this test slow; the lookup and its directives are the same code.)
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const BUILD_RS: &str = r#"
#[path = "BUILD_SUPPORT"]
mod build_support;

fn main() {
    let path = std::env::var_os("FAKE_PATH");
    let lookup = build_support::find_program("fake-clang".as_ref(), path.as_deref());
    for line in lookup.rerun_directives() {
        println!("{line}");
    }
    let answer = if lookup.found.is_some() { "found\n" } else { "missing\n" };
    let log = std::env::var("RUN_LOG").unwrap();
    let old = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::write(&log, old + answer).unwrap();
}
"#;

fn cargo_build(package: &Path, fake_path: &Path, log: &Path) {
    let out = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet"])
        .current_dir(package)
        .env("CARGO_TARGET_DIR", package.join("target"))
        .env("FAKE_PATH", fake_path)
        .env("RUN_LOG", log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn runs(log: &Path) -> Vec<String> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn installing_clang_makes_cargo_run_the_build_script_again() {
    let root: PathBuf = std::env::temp_dir().join(format!("ccfair-rerun-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let (package, bin, log) = (root.join("tiny"), root.join("bin"), root.join("runs.log"));
    fs::create_dir_all(package.join("src")).unwrap();
    fs::create_dir_all(&bin).unwrap();
    let support = Path::new(env!("CARGO_MANIFEST_DIR")).join("build_support.rs");
    fs::write(
        package.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    fs::write(package.join("src/lib.rs"), "").unwrap();
    let build_rs = BUILD_RS.replace("BUILD_SUPPORT", &support.display().to_string());
    fs::write(package.join("build.rs"), build_rs).unwrap();

    cargo_build(&package, &bin, &log);
    assert_eq!(runs(&log), ["missing"]);
    cargo_build(&package, &bin, &log); // nothing changed: cargo keeps the answer
    assert_eq!(runs(&log), ["missing"]);

    let clang = bin.join("fake-clang"); // "apt-get install clang"
    fs::write(&clang, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&clang, fs::Permissions::from_mode(0o755)).unwrap();
    cargo_build(&package, &bin, &log);
    assert_eq!(runs(&log), ["missing", "found"]);
    fs::remove_dir_all(&root).unwrap();
}
