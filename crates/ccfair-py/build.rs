//! Embed the git revision of the source tree for provenance (results record it), and
//! whether this is the profile-guided build (scripts/install_pgo.sh: `ccfair bench` and
//! its history say which build they measured).
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let rev = if dirty && rev != "unknown" {
        format!("{rev}-dirty")
    } else {
        rev
    };
    println!("cargo:rustc-env=CCFAIR_GIT_REVISION={rev}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
    // The flags the crates are compiled with (cargo reruns the script when they change).
    // `-Cprofile-use=F` or `-C profile-use=F`.
    let pgo = std::env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .split('\x1f')
        .any(|flag| flag.trim_start_matches("-C").starts_with("profile-use="));
    println!("cargo:rustc-env=CCFAIR_BUILD_PGO={pgo}");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}
