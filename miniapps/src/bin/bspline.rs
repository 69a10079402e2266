//! The `bspline` mini-app (see `miniapps::bspline`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("bspline").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
