// Embed the git commit (and whether the tree had uncommitted changes) so every record names the code it came from.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = std::env::var("QMC_COMMIT").ok().or_else(|| git(&["rev-parse", "HEAD"])).unwrap_or_else(|| "unknown".into());
    // --no-optional-locks: status must not refresh (rewrite) the index, which this script watches: after a fresh
    // clone it did, so the next cargo command ran the script again and rebuilt the harness and everything above it
    // (CI's cu-on-host.sh: 250 s of its 333 on 2 cores, 2026-12-07)
    let dirty = git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let text = if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=QMC_GIT_COMMIT={text}");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    println!("cargo:rerun-if-env-changed=QMC_COMMIT");
    // the toolchain and the CUDA bindings the records were built with
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc).arg("--version").output().ok().filter(|o| o.status.success());
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QMC_RUSTC_VERSION={version}");
    let lock = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../Cargo.lock");
    let cudarc = std::fs::read_to_string(&lock).ok().and_then(|t| locked_version(&t, "cudarc")).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QMC_CUDARC_VERSION={cudarc}");
    println!("cargo:rerun-if-changed={}", lock.display());
}

/// The version of package `name` in a Cargo.lock: the `version = "..."` line after its `name = "..."` line.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut lines = lock.lines();
    lines.find(|l| l.trim() == format!("name = \"{name}\""))?;
    let v = lines.next()?.trim().strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(v.to_string())
}
