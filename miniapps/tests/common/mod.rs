//! What the programs' integration tests share: reading a run's stderr, asserting a clean rejection of bad input, and
//! a scratch folder per test.
#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
use std::process::Output;

/// The run's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2, a message containing `needle`, and no panic trace.
pub fn rejects(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected exit 2, got {:?}; stderr: {e}", o.status.code());
    assert!(e.contains(needle), "stderr lacks '{needle}': {e}");
    assert!(!e.contains("panicked"), "panic trace: {e}");
}

/// A fresh folder under the system temp dir, unique to this test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qmc-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
