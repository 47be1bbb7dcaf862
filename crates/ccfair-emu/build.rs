//! Compile ccfair's BPF congestion controls (bpf/*.bpf.c) with clang when it is installed,
//! so that the kernel backend can run algorithms this kernel lacks (Copa) or modified ones
//! (the BBR variants) as struct_ops (docs/kernel.md). The objects are embedded in the
//! library (`include_bytes!` under `cfg(ccfair_bpf)`).
//!
//! Without clang or libbpf's headers the build goes on without them, and a kernel run that
//! needs one says what is missing (`CCFAIR_BPF_MISSING`). With `CCFAIR_REQUIRE_BPF=1` (CI)
//! that is an error instead. A compile error in the programs themselves always is.
//!
//! Whatever it found, the script tells cargo where to look for a change (build_support.rs):
//! installing clang or libbpf-dev later and building again (`pip install .`) runs it again.
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_support.rs"]
mod build_support;

use build_support::{clang_name, find_file, find_program, include_dirs};

const PROGRAMS: [&str; 2] = ["ccfair_bbr", "ccfair_copa"];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bpf");
    println!("cargo::rustc-check-cfg=cfg(ccfair_bpf)");
    println!("cargo:rerun-if-changed={}", root.display());
    for var in ["CLANG", "CPATH", "C_INCLUDE_PATH", "CCFAIR_REQUIRE_BPF"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build_all(&root, &out) {
        Ok(()) => println!("cargo:rustc-cfg=ccfair_bpf"),
        Err(missing) => {
            if std::env::var("CCFAIR_REQUIRE_BPF").is_ok_and(|v| v == "1") {
                panic!("CCFAIR_REQUIRE_BPF=1 but the BPF programs cannot be built: {missing}");
            }
            println!("cargo:warning=ccfair: BPF congestion controls not built: {missing}");
            println!("cargo:rustc-env=CCFAIR_BPF_MISSING={missing}");
        }
    }
}

/// Ok when every program compiled; Err(what is missing) when a tool is. Panics on a
/// compile error of the programs.
fn build_all(root: &Path, out: &Path) -> Result<(), String> {
    let name = clang_name(std::env::var_os("CLANG"));
    let lookup = find_program(&name, std::env::var_os("PATH").as_deref());
    for line in lookup.rerun_directives() {
        println!("{line}");
    }
    if lookup.found.is_none() {
        // Another PATH may find it. Not watched once found: pip's isolated builds put a new
        // temporary directory on PATH each time, and ccfair would be rebuilt every time.
        println!("cargo:rerun-if-env-changed=PATH");
    }
    let clang = lookup.found.unwrap_or_else(|| PathBuf::from(&name));
    if Command::new(&clang).arg("--version").output().is_err() {
        return Err(format!(
            "{} was not found when ccfair was built (Debian: apt-get install clang \
             libbpf-dev, then install ccfair again, e.g. pip install . in its source tree)",
            name.to_string_lossy()
        ));
    }
    let headers = find_file(
        Path::new("bpf/bpf_helpers.h"),
        &include_dirs(
            std::env::var_os("CPATH").as_deref(),
            std::env::var_os("C_INCLUDE_PATH").as_deref(),
        ),
    );
    for line in headers.rerun_directives() {
        println!("{line}");
    }
    for name in PROGRAMS {
        let src = root.join(format!("{name}.bpf.c"));
        let obj = out.join(format!("{name}.bpf.o"));
        let result = Command::new(&clang)
            .args([
                "-O2",
                "-g",
                "-target",
                "bpf",
                "-D__TARGET_ARCH_x86",
                "-Wall",
                "-Werror",
            ])
            .arg("-I")
            .arg(root)
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .output()
            .map_err(|e| format!("running {}: {e}", clang.display()))?;
        if !result.status.success() {
            let stderr = String::from_utf8_lossy(&result.stderr);
            if stderr.contains("bpf/bpf_helpers.h' file not found") {
                return Err(
                    "libbpf's headers (bpf/bpf_helpers.h) were not found when ccfair \
                     was built (Debian: apt-get install libbpf-dev, then install ccfair \
                     again, e.g. pip install . in its source tree)"
                        .into(),
                );
            }
            panic!("compiling {}:\n{stderr}", src.display());
        }
    }
    Ok(())
}
