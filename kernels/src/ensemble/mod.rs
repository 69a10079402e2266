//! What every QMC driver shares about its walkers as an ensemble, whatever the system (issue 20's driver layer,
//! below the drivers `qmc` and `solid`, importing only the base):
//! - [`comm`]: the ranks and how they talk (one rank, threads of this process, MPI);
//! - [`pack`]: walkers and run state as bytes, for migration and checkpoints;
//! - [`population`]: branching copies and the migration of walkers between ranks (transfer plans, traffic);
//! - [`balance`]: walker shares by measured rank speed;
//! - [`projection`]: weak scaling projected to many ranks from the per-generation terms of runs over a few;
//! - [`moves`]: the limited drift of a drift-diffusion move and the tally of proposals;
//! - [`dmc`]: the one DMC generation (weights, branching or comb, trial energy, estimator) over any engine
//!   ([`dmc::Ensemble`], the one engine interface), and [`vmc`]: the one VMC step and estimator over the same;
//! - [`blocking`], [`coverage`]: error bars of correlated series and how often they cover a known value.

pub mod balance;
pub mod blocking;
pub mod comm;
pub mod coverage;
pub mod dmc;
pub mod moves;
pub mod pack;
pub mod population;
pub mod projection;
pub mod vmc;
