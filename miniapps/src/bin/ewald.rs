//! The `ewald` mini-app (see `miniapps::ewald`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("ewald").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
