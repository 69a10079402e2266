//! The `jastrow` mini-app (see `miniapps::jastrow`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("jastrow").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
