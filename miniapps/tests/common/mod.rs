//! What the programs' integration tests share: running `qmcbench`, reading a run's stderr, asserting a clean rejection
//! of bad input, and a scratch folder per test.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `qmcbench` with `args`, run to its end.
pub fn qmcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qmcbench")).args(args).output().expect("qmcbench runs")
}

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

/// The document headless Chromium builds from the HTML page `page` (with a fresh profile in `profile`), or None
/// without Chromium; without it the test is skipped, unless QMC_REQUIRE_CHROMIUM is set (CI installs it and sets it).
pub fn browser_dom(page: &Path, profile: &Path) -> Option<String> {
    let Some(browser) = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].into_iter().find(|p| Path::new(p).exists()) else {
        assert!(std::env::var("QMC_REQUIRE_CHROMIUM").is_err(), "QMC_REQUIRE_CHROMIUM is set but no Chromium was found");
        eprintln!("SKIPPED: no Chromium (apt-get install chromium)");
        return None;
    };
    let dom = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    Some(String::from_utf8_lossy(&dom.stdout).into_owned())
}
