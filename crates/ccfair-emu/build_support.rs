//! How build.rs finds clang and libbpf's headers, and what it tells cargo to watch so that a
//! later build looks again when the answer could have changed.
//!
//! Cargo reruns a build script only when a path it named in `cargo:rerun-if-changed`
//! changed (or an environment variable named in `cargo:rerun-if-env-changed`). A build
//! without clang must therefore name where clang would appear: every directory of `PATH` it
//! searched (installing a program into a directory changes the directory's mtime, which
//! cargo compares with its last run). A build that found clang names the program itself (an
//! upgrade or removal reruns it). Without this, `apt-get install clang` followed by a
//! reinstall of ccfair reused the cached "not found" and still built no BPF programs.
//!
//! Included by build.rs and, for its unit tests, by the library under `cfg(test)`.
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Where a program or header was found, and the paths whose change can change that.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lookup {
    /// The file found, if any.
    pub found: Option<PathBuf>,
    /// Paths for `cargo:rerun-if-changed`: the file found, or the existing directories where
    /// it would appear.
    pub watch: Vec<PathBuf>,
}

impl Lookup {
    /// The `cargo:` lines that make cargo rerun the build script when this lookup could
    /// find something else.
    pub fn rerun_directives(&self) -> Vec<String> {
        self.watch
            .iter()
            .map(|p| format!("cargo:rerun-if-changed={}", p.display()))
            .collect()
    }
}

/// Looks up `program` as a shell would: a name with a `/` is that path, any other name is
/// searched in the directories of `search_path` (the value of `PATH`), first match wins.
/// Relative directories of `PATH` are skipped: cargo reads a relative watched path against
/// the package, not where the build runs.
pub fn find_program(program: &OsStr, search_path: Option<&OsStr>) -> Lookup {
    if Path::new(program).components().count() > 1 {
        let path = Path::new(program);
        let dir = path.parent().unwrap_or(Path::new("/"));
        return find_file(
            Path::new(path.file_name().unwrap_or(program)),
            &[dir.to_path_buf()],
        );
    }
    let dirs: Vec<PathBuf> = search_path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let mut lookup = Lookup::default();
    for dir in dirs.iter().filter(|d| d.is_absolute()) {
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            // Only the file found: watching the directories before it too would rebuild
            // ccfair every time a program is installed into one of them (a venv's bin/).
            lookup.found = Some(candidate.clone());
            lookup.watch = vec![candidate];
            return lookup;
        }
        if dir.is_dir() && !lookup.watch.contains(dir) {
            lookup.watch.push(dir.clone());
        }
    }
    lookup
}

/// Looks for `relative` (e.g. `bpf/bpf_helpers.h`) under each of `roots` (include
/// directories), first match wins. Watches the file found, or for each existing root the
/// deepest existing directory on the way to where the file would be (never above the root:
/// cargo walks a watched directory whole).
pub fn find_file(relative: &Path, roots: &[PathBuf]) -> Lookup {
    let mut lookup = Lookup::default();
    for root in roots.iter().filter(|r| r.is_absolute()) {
        let candidate = root.join(relative);
        if candidate.is_file() {
            lookup.found = Some(candidate.clone());
            lookup.watch = vec![candidate];
            return lookup;
        }
        let deepest = candidate
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(root))
            .find(|a| a.is_dir());
        if let Some(dir) = deepest {
            if !lookup.watch.iter().any(|w| w == dir) {
                lookup.watch.push(dir.to_path_buf());
            }
        }
    }
    lookup
}

/// The include directories clang searches for `<bpf/...>` headers on Linux: those of
/// `CPATH` and `C_INCLUDE_PATH`, then `/usr/local/include` and `/usr/include`.
pub fn include_dirs(cpath: Option<&OsStr>, c_include_path: Option<&OsStr>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [cpath, c_include_path]
        .into_iter()
        .flatten()
        .flat_map(std::env::split_paths)
        .filter(|d| d.is_absolute())
        .collect();
    dirs.push(PathBuf::from("/usr/local/include"));
    dirs.push(PathBuf::from("/usr/include"));
    dirs
}

/// The program clang's `CLANG` variable names, else `clang`.
pub fn clang_name(clang_env: Option<OsString>) -> OsString {
    clang_env
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "clang".into())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ccfair-build-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn install(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn without_clang_every_searched_directory_is_watched_and_with_it_only_clang() {
        let root = scratch("path");
        let (a, b) = (root.join("a"), root.join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let path = std::env::join_paths([&a, &root.join("missing"), &b, Path::new("rel")]).unwrap();

        let before = find_program(OsStr::new("clang"), Some(&path));
        assert_eq!(before.found, None);
        // Where clang would appear; not the missing directory, nor the relative one.
        assert_eq!(before.watch, vec![a.clone(), b.clone()]);
        assert_eq!(
            before.rerun_directives(),
            vec![
                format!("cargo:rerun-if-changed={}", a.display()),
                format!("cargo:rerun-if-changed={}", b.display()),
            ]
        );

        // "apt-get install clang": the program appears in a watched directory, and the
        // next lookup finds it and watches only it.
        let clang = install(&b, "clang");
        let after = find_program(OsStr::new("clang"), Some(&path));
        assert_eq!(after.found, Some(clang.clone()));
        assert_eq!(after.watch, vec![clang]);

        // A file that is not executable is not a program.
        fs::write(a.join("clang"), "").unwrap();
        assert_eq!(
            find_program(OsStr::new("clang"), Some(&path)).found,
            after.found
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_program_given_as_a_path_watches_its_directory_until_it_is_there() {
        let bin = scratch("clang-env");
        let clang = bin.join("clang-19");
        let missing = find_program(clang.as_os_str(), None);
        assert_eq!((missing.found, missing.watch), (None, vec![bin.clone()]));
        install(&bin, "clang-19");
        let found = find_program(clang.as_os_str(), None);
        assert_eq!(
            (found.found, found.watch),
            (Some(clang.clone()), vec![clang])
        );
        // A directory that does not exist is not watched (nor anything above it).
        let nowhere = bin.join("no/such/clang");
        assert_eq!(find_program(nowhere.as_os_str(), None), Lookup::default());
        fs::remove_dir_all(&bin).unwrap();
    }

    #[test]
    fn a_missing_header_watches_the_deepest_existing_directory_of_each_include_root() {
        let root = scratch("include");
        let (local, usr) = (root.join("local"), root.join("usr"));
        fs::create_dir_all(&local).unwrap();
        fs::create_dir_all(usr.join("bpf")).unwrap();
        let header = Path::new("bpf/bpf_helpers.h");
        let roots = vec![local.clone(), usr.clone(), root.join("nowhere")];
        let missing = find_file(header, &roots);
        assert_eq!(missing.found, None);
        // Where libbpf-dev would put the header; a root that does not exist is not watched.
        assert_eq!(missing.watch, vec![local.clone(), usr.join("bpf")]);
        fs::write(usr.join("bpf/bpf_helpers.h"), "").unwrap(); // "apt-get install libbpf-dev"
        let found = find_file(header, &roots);
        assert_eq!(found.found, Some(usr.join("bpf/bpf_helpers.h")));
        assert_eq!(found.watch, vec![usr.join("bpf/bpf_helpers.h")]);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn include_dirs_put_the_environments_first_and_keep_absolute_ones() {
        let dirs = include_dirs(Some(OsStr::new("/opt/inc:rel")), None);
        assert_eq!(
            dirs,
            ["/opt/inc", "/usr/local/include", "/usr/include"].map(PathBuf::from)
        );
        assert_eq!(clang_name(Some("".into())), OsString::from("clang"));
        assert_eq!(
            clang_name(Some("clang-19".into())),
            OsString::from("clang-19")
        );
    }
}
