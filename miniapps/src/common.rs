//! What every mini-app shares: its arguments' trait, parsing a suite's command line, running inside a shared runner,
//! size grids. The whole `main` of a mini-app binary is `registry::kernel_main` (it checks a planted slowdown against
//! the registry's names).

use harness::cli::CommonArgs;
use kernels::ensemble::balance::Balance;
use harness::Runner;

/// A mini-app's arguments: its own sizes plus the common flags.
pub trait KernelArgs: clap::Parser {
    fn common(&self) -> &CommonArgs;
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

/// --balance: how DMC spreads the walkers over ranks after each generation's population control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shares {
    Equal,
    Speed,
}

/// --sync: how DMC's ranks meet each generation (`kernels::ensemble::dmc::Control::Lagged`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Sync {
    Each,
    Lagged,
}

impl From<Shares> for Balance {
    fn from(s: Shares) -> Balance {
        match s {
            Shares::Equal => Balance::Equal,
            Shares::Speed => Balance::Speed,
        }
    }
}
