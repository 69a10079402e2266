//! The `gemm` mini-app (see `miniapps::gemm`).
fn main() -> std::process::ExitCode {
    miniapps::registry::find("gemm").map(|k| (k.main)(std::env::args_os().collect())).unwrap_or(std::process::ExitCode::from(2))
}
