//! The `qmc` VMC/DMC driver (see `miniapps::qmc`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("qmc").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
