//! The `determinant` mini-app (see `miniapps::determinant`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("determinant").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
