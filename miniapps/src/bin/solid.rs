//! The `solid` mini-app (see `miniapps::solid`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("solid").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
