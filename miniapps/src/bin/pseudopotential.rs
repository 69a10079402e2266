//! The `pseudopotential` mini-app (see `miniapps::pseudopotential`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("pseudopotential").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
