//! The `lattice` mini-app (see `miniapps::lattice`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("lattice").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
