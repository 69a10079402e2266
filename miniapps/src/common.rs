//! What every mini-app binary shares: parse, set up the runner, run, write, exit with the harness convention.

use harness::cli::{main_with, CommonArgs};
use harness::Runner;
use std::ffi::OsString;
use std::process::ExitCode;

/// A mini-app's arguments: its own sizes plus the common flags.
pub trait KernelArgs: clap::Parser {
    fn common(&self) -> &CommonArgs;
}

/// The whole `main` of a mini-app: clap errors exit 2 with usage; run errors print one line and exit 2; a failed
/// validation exits 1.
pub fn kernel_main<A: KernelArgs>(name: &'static str, argv: Vec<OsString>, run: fn(&mut Runner, &A) -> anyhow::Result<()>) -> ExitCode {
    let args = A::parse_from(argv);
    main_with(|| {
        let mut runner = Runner::new(args.common())?;
        crate::registry::check_plant(&runner)?;
        runner.set_kernel(Some(name));
        run(&mut runner, &args)?;
        runner.finish()
    })
}

/// A mini-app's arguments from a command line of its own flags (a suite preset), or why they do not parse.
pub fn parse<A: KernelArgs>(name: &str, argv: &[&str]) -> anyhow::Result<A> {
    let full: Vec<&str> = std::iter::once(name).chain(argv.iter().copied()).collect();
    A::try_parse_from(&full).map_err(|e| anyhow::anyhow!("suite arguments of {name}: {e}"))
}

/// Run a mini-app inside an existing runner (the suite) from a command line of its own flags; its `--variants`,
/// `--precision` and `--reps` narrow the runner's for this kernel.
pub fn run_in<A: KernelArgs>(runner: &mut Runner, name: &'static str, argv: &[&str], run: fn(&mut Runner, &A) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let args = parse::<A>(name, argv)?;
    runner.narrowed(args.common(), |r| {
        r.set_kernel(Some(name));
        let out = run(r, &args);
        r.set_kernel(None);
        out
    })
}

/// Every combination of the given size lists, in order (the outer list varies slowest).
pub fn grid3<A: Copy, B: Copy, C: Copy>(a: &[A], b: &[B], c: &[C]) -> Vec<(A, B, C)> {
    a.iter().flat_map(|&x| b.iter().flat_map(move |&y| c.iter().map(move |&z| (x, y, z)))).collect()
}
