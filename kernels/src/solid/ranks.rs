//! The solid's DMC, on one rank or many (one per GPU, or per CPU core group): the one population control of the
//! batched engines. A single engine's DMC step (`CpuEngine::step`, `GpuEngine::step`: [`step_alone`]) is
//! [`generation`] on one rank ([`Solo`](crate::ensemble::comm::Solo)); over ranks each rank's engine owns its share
//! of the walkers (`comm::share` of the total, global walker indices from `Params::first`, so no two ranks share a
//! random stream) and propagates them; population control is global.
//!
//! A generation is the one DMC generation of the suite ([`crate::ensemble::dmc`]) under its comb
//! ([`Control::Comb`]): every rank's engine advances its walkers (sweep, measurement, nonlocal energy); one sum over
//! ranks carries each rank's weight total and the weighted energy; one comb over all ranks' walkers in rank order
//! gives rank r's walkers exactly the copies one comb over the whole population would give them, so every rank
//! derives every rank's copy count from the same sums. [`Slots`] then renews the population in the engine's slots:
//! each rank makes its copies in place ([`place`]: survivors keep their slots, extra copies fill the slots of the
//! dead); a rank with more copies than its share sends the surplus, a rank with fewer receives, walker by walker
//! (`exchange`: the transfer plan from the per-rank copy counts to the shares). The total population stays N and
//! every rank ends with its share: equal shares, so the engines keep their sizes, or, with shares by speed
//! ([`Balance::Speed`], the CPU engine only: `Engine::resize`), shares that follow each rank's measured compute time
//! per walker, so a rank on a slower core holds fewer walkers and the others wait less for it.
//!
//! What a migrating walker carries is the run's [`Cargo`]:
//! - configuration: positions, rotations, energies and condition number (14 KB at 512 electrons); the receiving
//!   engine rebuilds the inverse and gradient rows of all its arrivals in one batched pass (`Engine::rebuild`, a
//!   fresh measurement with f64 re-inversion), as production codes do. Its rows are those of a re-inversion, so its
//!   later steps agree with the other cargos' to rounding (closer to the f64 reference, if anything);
//! - inverse: the inverse rows too (0.5 MB at 512 electrons in mixed, 1 MB in double: rows travel in their storage
//!   type), the gradient rows rebuilt (orbital gradients at the positions: no inversion), so it continues exactly
//!   as on its old rank;
//! - whole: every array, the gradient rows too (2 MB at 512 electrons in mixed), nothing rebuilt.
//!
//! Every cargo carries the energies, so the generation's estimate does not depend on it.
//!
//! How the arrays get there is the run's [`Via`]: through the host (device to host, the message, host to device), or,
//! between threads ranks of one process with a GPU each, device to device: the sender stages the walkers in a device
//! outbox and the message carries where they lie; the receiver copies them over the devices' link.

use super::finite::Finite;
use super::walker::Walker;
use super::{Params, SolidError};
use crate::ensemble::balance::Balance;
use crate::ensemble::comm::{Comm, Solo};
use crate::ensemble::vmc::Vmc;
use crate::ensemble::dmc::{self, Control, Dmc, DmcError, Ensemble};
use crate::ensemble::moves::MoveStats;
use crate::ensemble::pack::{frames, pack_all, unpack_all};
use crate::ensemble::population::{plan_to, Traffic};
use crate::pseudopotential::slab::Field;
use crate::Real;
use std::time::Instant;

/// What a migrating walker carries (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cargo {
    /// Positions, rotations, energies and condition number; the receiver rebuilds the rows.
    Configuration,
    /// The inverse rows too; the receiver rebuilds the gradient rows. The default: on two H200s (mixed, 256 walkers
    /// a GPU) it measured the fastest at 256 and 512 electrons over threads and MPI: 45.5 ms a generation at 512
    /// electrons (MPI) against 49.0 (configuration, whose f64 re-inversion of a few 256 x 256 matrices costs about
    /// 2.3 ms on the receiving rank, with cuBLAS's batched LU or cuSOLVER's alike) and 47.9 (whole), f6bd8fa.
    #[default]
    Inverse,
    /// Everything, the gradient rows too; nothing is rebuilt.
    Whole,
}

impl Cargo {
    pub fn name(self) -> &'static str {
        match self {
            Cargo::Configuration => "configuration",
            Cargo::Inverse => "inverse",
            Cargo::Whole => "whole",
        }
    }
    /// The first slab array a walker of this cargo leaves behind (None: nothing).
    pub(super) fn upto(self) -> Option<Field> {
        match self {
            Cargo::Configuration => Some(Field::Inv),
            Cargo::Inverse => Some(Field::Dpsi),
            Cargo::Whole => None,
        }
    }
}

/// How a migrating walker's arrays reach the other rank (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Via {
    /// Through the host: device to host (one DMA transfer into page-locked memory), the message, host to device.
    /// The default, being the only path MPI ranks have: on the 2 x H200 host (peer access on) neither path won at
    /// f6bd8fa (inverse cargo, threads, ms a generation: 14.16 host against 14.34 device at 256 electrons, 45.81
    /// against 45.18 at 512). (At 7b9fd19, with the copies of branching queued before the exchange, device to
    /// device measured 57.5 against 48.3.)
    #[default]
    Host,
    /// Device to device (threads ranks of one process, a GPU each); the message carries where they lie.
    Device,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Host => "host",
            Via::Device => "device",
        }
    }
}

impl std::str::FromStr for Via {
    type Err = String;
    fn from_str(s: &str) -> Result<Via, String> {
        match s {
            "host" => Ok(Via::Host),
            "device" => Ok(Via::Device),
            _ => Err(format!("unknown migration path {s:?}: use device (GPU to GPU, threads ranks) or host (through the host's memory)")),
        }
    }
}

impl std::str::FromStr for Cargo {
    type Err = String;
    fn from_str(s: &str) -> Result<Cargo, String> {
        match s {
            "configuration" => Ok(Cargo::Configuration),
            "inverse" => Ok(Cargo::Inverse),
            "whole" => Ok(Cargo::Whole),
            _ => Err(format!(
                "unknown migration cargo {s:?}: use configuration (positions; the receiver rebuilds the rest), inverse (the inverse rows too) or whole (the full state)"
            )),
        }
    }
}

/// What the population control needs of an engine (CPU or GPU) storing its rows in S.
pub trait Engine<S> {
    fn count(&self) -> usize;
    /// One step without branching (sweep, measurement, nonlocal energy).
    fn advance(&mut self) -> Result<(), SolidError>;
    /// Local energies of all walkers.
    fn energies(&self) -> Vec<f64>;
    /// Slot s takes the state of walker `parents[s]`; no parent's own slot is a target.
    fn copy_slots(&mut self, parents: &[usize]) -> Result<(), SolidError>;
    /// Walker k's state as `cargo` says.
    fn take(&mut self, k: usize, cargo: Cargo) -> Result<Walker<S>, SolidError>;
    /// Walkers `ks` for migration with their arrays staged on the engine's device, for a rank of this process to
    /// copy device to device (`Via::Device`); None where the engine has no device (they go through the host).
    fn stage(&mut self, _ks: &[usize], _cargo: Cargo) -> Result<Option<Vec<Walker<S>>>, SolidError> {
        Ok(None)
    }
    /// Slot k takes `w` (whole, or a configuration whose rows `rebuild` then makes).
    fn put(&mut self, k: usize, w: &Walker<S>) -> Result<(), SolidError>;
    /// The rows the walkers put into `slots` did not carry (`cargo`'s), from their positions (one batched pass on
    /// the GPU).
    fn rebuild(&mut self, slots: &[usize], cargo: Cargo) -> Result<(), SolidError>;
    /// The engine's tally of energies and weights checked finite.
    fn finite(&mut self) -> &mut Finite;
    /// The engine's tally of moves so far.
    fn moves(&self) -> MoveStats;
    /// Hold `n` walker slots: new slots (past the count) wait to be filled by copies or arrivals; slots past `n`
    /// go. An engine whose slots are fixed (the GPU's buffers and captured launches) refuses any other count.
    fn resize(&mut self, n: usize) -> Result<(), SolidError> {
        if n == self.count() { Ok(()) } else { Err(SolidError::Fixed(self.count(), n)) }
    }
    /// Its walkers are walkers `first..` of the global order from now on (their random streams' indices): under
    /// shares by speed a rank's first walker moves from one generation to the next.
    fn renumber(&mut self, first: usize);
}

/// Where copies go on one rank: `parents[s]` the walker whose state slot s takes, `send` the walkers whose
/// surplus copies leave, `open` the slots left for arriving walkers.
pub struct Placement {
    pub parents: Vec<usize>,
    pub send: Vec<usize>,
    pub open: Vec<usize>,
}

/// Walker j's `copies[j]` placed in `slots` slots (the engine's count after the generation: its share): survivors
/// keep their slots, extra copies fill the dead walkers' slots in order, then the new slots past the walkers; a
/// walker whose slot goes (past `slots`) has all its copies placed as extras. No source is a target (dead and new
/// slots hold no walker, and the slots that go are no target), so the copies can be made in place in any order; what
/// does not fit leaves, what stays empty waits for arrivals.
pub fn place(copies: &[usize], slots: usize) -> Placement {
    let mut parents: Vec<usize> = (0..slots).collect();
    let free: Vec<usize> = (0..copies.len().min(slots)).filter(|&s| copies[s] == 0).chain(copies.len()..slots).collect();
    let extras: Vec<usize> = copies.iter().enumerate().flat_map(|(j, &c)| std::iter::repeat_n(j, if j < slots { c.saturating_sub(1) } else { c })).collect();
    let fit = extras.len().min(free.len());
    for (&slot, &from) in free.iter().zip(&extras) {
        parents[slot] = from;
    }
    Placement { parents, send: extras[fit..].to_vec(), open: free[fit..].to_vec() }
}

/// Where a rank's migration time went, summed over generations (the part of `dmc::Timing::migrate_s` that is not
/// the copies in place).
#[derive(Clone, Copy, Debug, Default)]
pub struct MigrationTiming {
    /// Taking the leaving walkers out of the engine (device to host on a GPU),
    pub take_s: f64,
    /// sending and receiving them (with the wait for the sender),
    pub exchange_s: f64,
    /// putting the arrivals into their slots (host to device),
    pub put_s: f64,
    /// and rebuilding what they did not carry (the GPU's launches only: they run at the next step).
    pub rebuild_s: f64,
}

/// How walkers migrate between ranks, and what they did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Migration {
    /// What a migrating walker carries.
    pub cargo: Cargo,
    /// How its arrays travel: device to device only between threads ranks (`generation` makes it host otherwise).
    pub via: Via,
    pub timing: MigrationTiming,
    /// The slot of the last walker that arrived on this rank (to validate: it crossed ranks).
    pub arrived: Option<usize>,
}

/// The DMC run of an engine built with `p` holding its share of `total` walkers over the ranks of `comm`: the one
/// generation under the comb, with the estimator from generation `equil` on (one sum over ranks, for the start).
pub fn dmc<S: Real>(comm: &dyn Comm, e: &mut dyn Engine<S>, p: &Params, total: usize, electrons: usize, equil: usize, control: Control) -> Result<Dmc, SolidError> {
    let params = dmc::Params { target: total, tau: p.tau, seed: p.seed, electrons, equil, control };
    Dmc::start(comm, &Slots { engine: e, migration: &mut Migration::default() }, params, None).map_err(dmc_error)
}

/// One DMC generation of this rank's engine with the population control over all ranks (module docs).
pub fn generation<S: Real>(comm: &dyn Comm, e: &mut dyn Engine<S>, d: &mut Dmc, migration: &mut Migration) -> Result<(), SolidError> {
    if comm.transport() != "threads" {
        migration.via = Via::Host;
    }
    d.generation(comm, &mut Slots { engine: e, migration }).map_err(dmc_error)
}

/// One VMC step of an engine alone: the one VMC loop's step ([`crate::ensemble::vmc`]); returns the new local
/// energies.
pub fn vmc_step<S: Real>(e: &mut dyn Engine<S>, v: &mut Vmc) -> Result<Vec<f64>, SolidError> {
    v.step(&Solo, &mut Slots { engine: e, migration: &mut Migration::default() })
}

/// The run an engine makes of its walkers by itself, step by step ([`step_alone`]): VMC, or DMC with the
/// population control on this engine alone ([`Solo`]). Every engine holds one from the end of its start on: an
/// engine that is one of several ranks holds the DMC of its own walkers too, which the ranks never step (they run
/// their own over all ranks: [`dmc()`], [`generation`]).
#[derive(Debug)]
// one per engine, moved out and back once a step: its size costs nothing worth a box
#[allow(clippy::large_enum_variant)]
pub enum Run {
    Vmc(Vmc),
    Dmc(Dmc),
}

impl Run {
    /// The run `p` asks for of engine `e` alone, its walkers measured (a DMC's start sums their energies).
    pub fn start<S: Real>(e: &mut dyn Engine<S>, p: &Params, electrons: usize) -> Result<Run, SolidError> {
        let count = e.count();
        Ok(if p.dmc { Run::Dmc(dmc(&Solo, e, p, count, electrons, 0, Control::Comb { balance: Balance::Equal })?) } else { Run::Vmc(Vmc::new(count, p.first, 0)) })
    }

    /// What an engine holds in place of its run before the run starts (the start needs the engine built and
    /// measured) and while its step has the run out ([`step_alone`]): a VMC of no walkers, never stepped.
    pub(super) fn placeholder() -> Run {
        Run::Vmc(Vmc::new(0, 0, 0))
    }

    /// The DMC run's population control and its generations' energies and weights (None in VMC).
    pub fn dmc(&self) -> Option<&Dmc> {
        match self {
            Run::Dmc(d) => Some(d),
            Run::Vmc(_) => None,
        }
    }

    /// The VMC run's steps' mean energies (None in DMC).
    pub fn vmc(&self) -> Option<&Vmc> {
        match self {
            Run::Vmc(v) => Some(v),
            Run::Dmc(_) => None,
        }
    }
}

/// One step of engine `e`'s own run (`run(e)`, [`Run`]), `step` the engine's steps before it: a VMC step, its new
/// energies tallied finite at `step` (a DMC generation tallies its energies and weights itself, `Slots::weighed`),
/// or a DMC generation on this engine alone, after which `branched(e, seconds, done)` gets the seconds of the
/// generation outside the engine's advance (its population control) and the generation's outcome, and returns the
/// step's. The run leaves `e` for the step (it steps `e`) and is back before anything returns, errors included.
pub fn step_alone<S: Real, E: Engine<S>>(
    e: &mut E,
    run: fn(&mut E) -> &mut Run,
    step: usize,
    branched: impl FnOnce(&mut E, f64, Result<(), SolidError>) -> Result<(), SolidError>,
) -> Result<(), SolidError> {
    let mut own = std::mem::replace(run(e), Run::placeholder());
    let (done, branching) = match &mut own {
        Run::Vmc(v) => (vmc_step(e, v).map(|energies| e.finite().tally(step, &energies)), None),
        Run::Dmc(d) => {
            let before = d.timing.compute_s;
            let start = Instant::now();
            let done = generation(&Solo, e, d, &mut Migration::default());
            // the advance's classes are timed inside it; the rest is the population control
            (done, Some(start.elapsed().as_secs_f64() - (d.timing.compute_s - before)))
        }
    };
    *run(e) = own;
    match branching {
        Some(seconds) => branched(e, seconds, done),
        None => done,
    }
}

/// Engine `e` (`run(e)` its own run) restarted from `walkers` (one for each of its slots, configurations or whole:
/// a VMC run's walkers that a DMC run goes on from): each put into its slot, the rows a configuration did not carry
/// rebuilt in one batched pass (with an f64 re-inversion), and the run `p` asks for started again over them (a DMC's
/// start sums their energies). The engine's step count goes on, so its random numbers do not repeat a run's before.
pub fn start_from<S: Real, E: Engine<S>>(e: &mut E, run: fn(&mut E) -> &mut Run, walkers: &[Walker<S>], p: &Params, electrons: usize) -> Result<(), SolidError> {
    assert_eq!(walkers.len(), e.count(), "solid: one walker a slot to start from");
    for (k, w) in walkers.iter().enumerate() {
        e.put(k, w)?;
    }
    let slots: Vec<usize> = (0..walkers.len()).collect();
    let whole = walkers.iter().all(|w| !w.inv.is_empty() && !w.dpsi.is_empty());
    e.rebuild(&slots, if whole { Cargo::Whole } else { Cargo::Configuration })?;
    *run(e) = Run::start(e, p, electrons)?;
    Ok(())
}

fn dmc_error(e: DmcError) -> SolidError {
    SolidError::Dmc(e.to_string())
}

/// A solid engine as the one DMC generation's ensemble: fixed slots, so its population control is the comb, and
/// its walkers migrate as `migration` says.
pub struct Slots<'a, S> {
    pub engine: &'a mut dyn Engine<S>,
    pub migration: &'a mut Migration,
}

impl<S: Real> Ensemble for Slots<'_, S> {
    type Error = SolidError;
    fn len(&self) -> usize {
        self.engine.count()
    }
    fn energies(&self) -> Result<Vec<f64>, SolidError> {
        Ok(self.engine.energies())
    }
    /// The engine was built with the run's time step and seed; its walkers are renumbered from `first`, this rank's
    /// first walker in the global order (the same each generation under equal shares, moving under shares by speed),
    /// so no two walkers of any rank share a random stream; its steps count the generations. Both engines sum the moves'
    /// displacements, so the weights use tau_eff (`ensemble::dmc::effective_tau`).
    fn advance(&mut self, _gen: usize, first: usize) -> Result<(MoveStats, Vec<f64>), SolidError> {
        self.engine.renumber(first);
        let before = self.engine.moves();
        self.engine.advance()?;
        let m = self.engine.moves().since(&before);
        Ok((m, self.engine.energies()))
    }
    fn weighed(&mut self, gen: usize, energies: &[f64], weights: &[f64]) {
        self.engine.finite().tally(gen, energies);
        self.engine.finite().tally(gen, weights);
    }
    fn repopulate(&mut self, comm: &dyn Comm, copies: &[usize], counts: &[usize], goals: &[usize]) -> Result<Traffic, SolidError> {
        let (now, goal) = (self.engine.count(), goals[comm.rank()]);
        let p = place(copies, goal);
        if goal > now {
            self.engine.resize(goal)?;
        }
        let (traffic, arrived) = exchange(comm, self.engine, self.migration, &p, counts, goals)?;
        self.engine.copy_slots(&p.parents)?;
        if goal < now {
            self.engine.resize(goal)?;
            // an earlier arrival's slot may be gone
            self.migration.arrived = self.migration.arrived.filter(|&k| k < goal);
        }
        let cargo = self.migration.cargo;
        let rebuilt = if cargo == Cargo::Whole { &[][..] } else { &p.open[..arrived] };
        let r = Instant::now();
        self.engine.rebuild(rebuilt, cargo)?;
        self.migration.timing.rebuild_s += r.elapsed().as_secs_f64();
        Ok(traffic)
    }
}

/// The migration of one generation, walker by walker: the transfers of `ensemble::population::plan_to` (to
/// `goals`, equal shares; the same plan on every rank), each walker taken out of the engine, packed and sent on its own, so the receiver
/// unpacks and puts one while the sender takes the next; the walkers of `p.send` leave in order and the arrivals fill
/// `p.open` in order. With `Via::Device` all leaving walkers are staged on the device first (one outbox). Returns the
/// traffic and the number of arrivals.
fn exchange<S: Real>(comm: &dyn Comm, e: &mut dyn Engine<S>, d: &mut Migration, p: &Placement, counts: &[usize], goals: &[usize]) -> Result<(Traffic, usize), SolidError> {
    let me = comm.rank();
    let moves = plan_to(counts, goals);
    let mut traffic = Traffic::default();
    let t = Instant::now();
    let staged = if d.via == Via::Device { e.stage(&p.send, d.cargo)? } else { None };
    let mut staged: Vec<Option<Walker<S>>> = staged.map_or_else(|| vec![None; p.send.len()], |w| w.into_iter().map(Some).collect());
    d.timing.take_s += t.elapsed().as_secs_f64();
    let (mut sent, mut arrived) = (0, 0);
    for m in &moves {
        for _ in 0..m.n {
            if m.from == me {
                let t = Instant::now();
                let w = match staged[sent].take() {
                    Some(w) => w,
                    None => e.take(p.send[sent], d.cargo)?,
                };
                d.timing.take_s += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let bytes = pack_all(std::slice::from_ref(&w));
                traffic.bytes += bytes.len() as u64;
                comm.send(m.to, bytes);
                d.timing.exchange_s += t.elapsed().as_secs_f64();
                sent += 1;
            } else if m.to == me {
                let t = Instant::now();
                let bytes = comm.recv(m.from);
                traffic.bytes += bytes.len() as u64;
                let w = match frames(&bytes).and_then(|f| unpack_all::<Walker<S>>(&(), &f)) {
                    Ok(mut w) if w.len() == 1 => w.pop().expect("one walker"),
                    _ => comm.abort(&format!("rank {me}: a walker from rank {} arrived damaged", m.from)),
                };
                d.timing.exchange_s += t.elapsed().as_secs_f64();
                let Some(&slot) = p.open.get(arrived) else {
                    comm.abort(&format!("rank {me}: more walkers arrived than the {} open slots", p.open.len()));
                };
                let t = Instant::now();
                e.put(slot, &w)?;
                d.timing.put_s += t.elapsed().as_secs_f64();
                d.arrived = Some(slot);
                arrived += 1;
            } else {
                break;
            }
            traffic.walkers += 1;
        }
    }
    if sent != p.send.len() || arrived != p.open.len() {
        comm.abort(&format!("rank {me}: sent {sent} of {} walkers, received {arrived} for {} open slots", p.send.len(), p.open.len()));
    }
    Ok((traffic, arrived))
}

#[cfg(test)]
mod tests {
    use super::super::cpu::CpuEngine;
    use super::super::gpu::GpuEngine;
    use super::super::{compare, Params, Solid, DOUBLE_TOLERANCE};
    use crate::ensemble::comm::share;
    use super::*;
    use crate::ensemble::comm::Threads;
    use crate::ensemble::population::comb_copies;

    #[test]
    fn placement_keeps_survivors_and_counts_what_leaves_and_arrives() {
        let p = place(&[0, 3, 1, 0], 4);
        assert_eq!(p.parents, [1, 1, 2, 1]);
        assert!(p.send.is_empty() && p.open.is_empty());
        let p = place(&[0, 4, 1, 0], 4);
        assert_eq!((p.parents, p.send, p.open), (vec![1, 1, 2, 1], vec![1], vec![]));
        let p = place(&[0, 2, 0, 0], 4);
        assert_eq!((p.parents, p.send, p.open), (vec![1, 1, 2, 3], vec![], vec![2, 3]));
        // shares by speed: a share of five slots, the new fifth waiting for an arrival
        let p = place(&[0, 3, 1, 0], 5);
        assert_eq!((p.parents, p.send, p.open), (vec![1, 1, 2, 1, 4], vec![], vec![4]));
        // a share of two: the walkers of the slots that go leave with every copy, the survivor of slot 0 its extra
        let p = place(&[2, 1, 0, 1], 2);
        assert_eq!((p.parents, p.send, p.open), (vec![0, 1], vec![0, 3], vec![]));
        // a share of three: a copy of the walker in slot 2 fills slot 0, its other copy leaves
        let p = place(&[0, 1, 3, 0], 3);
        assert_eq!((p.parents, p.send, p.open), (vec![2, 1, 2], vec![2], vec![]));
        // one rank: a comb's copies all fit, and no slot that is a source is overwritten
        let weights = [0.01, 3.0, 0.01, 1.0];
        let p = place(&comb_copies(&weights, 0.0, weights.iter().sum(), 4, 0.5, 0..4), 4);
        assert_eq!((p.parents.clone(), p.send, p.open), (vec![1, 1, 1, 3], vec![], vec![]));
        assert!(p.parents.iter().enumerate().all(|(slot, &from)| from == slot || p.parents[from] == from));
    }

    /// Two ranks of two walkers against one engine of four: the same start (global walker indices), the same random
    /// numbers, so after each of two generations the same energy estimate, and the same walkers (by local energy)
    /// across the ranks after the comb and migration, each rank holding two. The second generation's energies come
    /// from walkers that may have crossed ranks in the first: arrays that arrived wrong (positions, inverse or
    /// gradient rows) would change them. A walker that crossed ranks still matches the f64 reference. A long time
    /// step spreads the weights, so some seeds make a rank send walkers.
    #[test]
    fn two_ranks_make_the_one_engine_generations() {
        let sys = Solid::carbon(16, 3).unwrap();
        for cargo in [Cargo::Whole, Cargo::Inverse, Cargo::Configuration] {
            let mut migrated = 0;
            for seed in 1..=4 {
                let p = Params { tau: 0.5, dmc: true, recompute: 0, seed, first: 0, delay: 4 };
                let mut one = CpuEngine::<f64, f64>::new(&sys, 4, p).unwrap();
                let mut want = vec![(one.dmc().unwrap().acc.e_est, one.energies())];
                for _ in 0..2 {
                    one.step().unwrap();
                    want.push((one.dmc().unwrap().acc.e_est, one.energies()));
                }
                migrated += two_ranks(&sys, p, cargo, Via::Device, &want, |_, n, p| CpuEngine::<f64, f64>::new(&sys, n, p).unwrap());
            }
            assert!(migrated > 0, "no seed moved a walker between ranks: the test did not exercise migration ({cargo:?})");
        }
    }

    /// Shares by speed on the CPU engine: two ranks of four walkers, every walker one copy, renewed to shares of
    /// three and five: rank 0 keeps its first three, its fourth arrives in rank 1's new fifth slot; then back to four
    /// and four, the same walker returning to rank 0's fourth slot. The engines resize, their walkers' energies are
    /// where the plan says, bit for bit, and both still step.
    #[test]
    fn cpu_engines_take_uneven_shares_and_give_them_back() {
        let sys = Solid::carbon(16, 3).unwrap();
        let p = Params { tau: 0.02, dmc: true, recompute: 0, seed: 5, first: 0, delay: 4 };
        let out = Threads::run(2, |c| {
            let mut e = CpuEngine::<f64, f64>::new(&sys, 4, Params { first: 4 * c.rank(), ..p }).unwrap();
            let before = e.energies();
            let mut m = Migration::default();
            Slots { engine: &mut e, migration: &mut m }.repopulate(c, &[1; 4], &[4, 4], &[3, 5]).unwrap();
            let uneven = e.energies();
            let copies = vec![1; e.count()];
            Slots { engine: &mut e, migration: &mut m }.repopulate(c, &copies, &[3, 5], &[4, 4]).unwrap();
            let back = e.energies();
            e.advance().unwrap();
            assert!(e.energies().iter().all(|x| x.is_finite()), "rank {}: {:?}", c.rank(), e.energies());
            (before, uneven, back)
        });
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (r0, r1) = (&out[0], &out[1]);
        assert_eq!(bits(&r0.1), bits(&r0.0[..3]));
        assert_eq!(bits(&r1.1), bits(&[&r1.0[..], &r0.0[3..]].concat()));
        assert_eq!((bits(&r0.2), bits(&r1.2)), (bits(&r0.0), bits(&r1.0)));
    }

    /// A GPU engine holds a fixed number of walkers: a share of another number is an error, not a wrong state.
    #[test]
    fn a_gpu_engine_refuses_another_share_when_present() {
        let Some(gpu) = crate::gpu::for_test() else { return };
        let sys = Solid::carbon(16, 3).unwrap();
        let p = Params { tau: 0.02, dmc: true, recompute: 0, seed: 5, first: 0, delay: 4 };
        let setup = sys.setup.convert::<f64>();
        let mut e = GpuEngine::<f64, f64>::new(&gpu, &sys, &setup, 4, p).unwrap();
        assert!(matches!(Engine::resize(&mut e, 5), Err(SolidError::Fixed(4, 5))));
        assert!(Engine::resize(&mut e, 4).is_ok());
    }

    /// As `two_ranks_make_the_one_engine_generations`, with a GPU engine per rank (each rank opens the GPU of its
    /// local rank, so on one GPU both share it), the arrays through the host and device to device.
    #[test]
    fn two_gpu_ranks_make_the_one_engine_generations_through_host_and_device_when_present() {
        let Some(gpu) = crate::gpu::for_test() else { return };
        let sys = Solid::carbon(16, 3).unwrap();
        let setup = sys.setup.convert::<f64>();
        for via in [Via::Host, Via::Device] {
            for cargo in [Cargo::Whole, Cargo::Inverse, Cargo::Configuration] {
                let mut migrated = 0;
                for seed in 1..=4 {
                    let p = Params { tau: 0.5, dmc: true, recompute: 0, seed, first: 0, delay: 4 };
                    let mut one = GpuEngine::<f64, f64>::new(&gpu, &sys, &setup, 4, p).unwrap();
                    let mut want = vec![(one.dmc().unwrap().acc.e_est, one.energies().unwrap())];
                    for _ in 0..2 {
                        one.step().unwrap();
                        want.push((one.dmc().unwrap().acc.e_est, one.energies().unwrap()));
                    }
                    let count = crate::gpu::Gpu::count().unwrap();
                    migrated += two_ranks(&sys, p, cargo, via, &want, |c, n, p| {
                        let g = crate::gpu::Gpu::open(c.local_rank() % count).unwrap();
                        let setup = setup.clone();
                        // the engine borrows the system only; its GPU handle is shared
                        GpuEngine::<f64, f64>::new(&g, &sys, &setup, n, p).unwrap()
                    });
                }
                assert!(migrated > 0, "no seed moved a walker between GPU ranks ({cargo:?}, {via:?})");
            }
        }
    }

    /// Lagged ranks (`Control::Lagged`) on the engines, their sums in flight 1 and 2 generations: two thread ranks of
    /// 3 walkers each keep their shares through 12 generations (with a factor spread of 1.0001 some generations comb
    /// over all ranks, the others each rank its own), every walker's energy and weight finite, and both ranks hold the
    /// same state once finished: CPU engine, and where there is one the GPU's (double).
    #[test]
    fn lagged_ranks_drive_the_engines_gpu_too_when_present() {
        let sys = Solid::carbon(16, 3).unwrap();
        let p = Params { tau: 0.1, dmc: true, recompute: 0, seed: 5, first: 0, delay: 4 };
        lagged_two(&sys, p, |_, n, p| CpuEngine::<f64, f64>::new(&sys, n, p).unwrap());
        if crate::gpu::for_test().is_some() {
            let setup = sys.setup.convert::<f64>();
            let count = crate::gpu::Gpu::count().unwrap();
            lagged_two(&sys, p, |c, n, p| {
                // a GPU handle of each rank's own, as the driver opens them: engines of two threads on one handle's
                // stream would capture their sweep graphs into it at once
                let g = crate::gpu::Gpu::open(c.local_rank() % count).unwrap();
                GpuEngine::<f64, f64>::new(&g, &sys, &setup, n, p).unwrap()
            });
        }
    }

    fn lagged_two<S: Real, E: Engine<S>>(sys: &Solid, p: Params, make: impl Fn(&Threads, usize, Params) -> E + Sync) {
        for lag in [1, 2] {
            lagged_two_at(sys, p, lag, &make);
        }
    }

    fn lagged_two_at<S: Real, E: Engine<S>>(sys: &Solid, p: Params, lag: usize, make: &(impl Fn(&Threads, usize, Params) -> E + Sync)) {
        let out = Threads::run(2, |c| {
            let (first, n) = share(6, c.rank(), 2);
            let mut e = make(c, n, Params { first, ..p });
            let control = Control::Lagged { spread: 1.0001, lag, balance: Balance::Equal };
            let mut d = dmc(c, &mut e, &Params { first, ..p }, 6, sys.electrons(), 0, control).unwrap();
            let mut m = Migration::default();
            for _ in 0..12 {
                generation(c, &mut e, &mut d, &mut m).unwrap();
                assert_eq!(e.count(), n);
            }
            d.finish(c).unwrap();
            assert_eq!((e.finite().checked, e.finite().bad), (2 * 3 * 12, 0), "energy and weight of 3 walkers, 12 generations");
            (d.acc.clone(), d.rebalances())
        });
        assert_eq!(out[0], out[1], "lag {lag}: both ranks hold the same state");
        assert_eq!(out[0].0.gen, 12);
        assert!(out[0].1 > 0 && out[0].1 < 12, "lag {lag}: {} of 12 generations combed over all ranks", out[0].1);
    }

    /// Two thread ranks of two walkers each (`make(comm, walkers, params)`) for `want.len() - 1` generations against
    /// the one engine's (E_est, energies) at its start and after each step; returns the walkers that crossed ranks.
    fn two_ranks<S: Real, E: Engine<S>>(sys: &Solid, p: Params, cargo: Cargo, via: Via, want: &[(f64, Vec<f64>)], make: impl Fn(&Threads, usize, Params) -> E + Sync) -> u64 {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-10 * b.abs();
        let out = Threads::run(2, |c| {
            let (first, n) = share(4, c.rank(), 2);
            let mut e = make(c, n, Params { first, ..p });
            let mut d = dmc(c, &mut e, &Params { first, ..p }, 4, sys.electrons(), 0, Control::Comb { balance: Balance::Equal }).unwrap();
            let mut m = Migration { cargo, via, ..Default::default() };
            let mut seen = vec![(d.acc.e_est, e.energies())];
            for _ in 1..want.len() {
                generation(c, &mut e, &mut d, &mut m).unwrap();
                seen.push((d.acc.e_est, e.energies()));
            }
            assert_eq!(m.via, via, "threads ranks keep the path asked for");
            assert_eq!((e.finite().checked, e.finite().bad), (4 * (want.len() - 1) as u64, 0), "both walkers' energy and weight checked finite");
            if let Some(k) = m.arrived {
                let w = e.take(k, Cargo::Whole).unwrap();
                let c = compare(sys, &w.pos, &w.rot, w.parts, &w.inv_f64()).unwrap();
                assert!(c.energy < DOUBLE_TOLERANCE && c.inverse < 1e-8, "walker that arrived: energy error {:.2e}, inverse error {:.2e}", c.energy, c.inverse);
            }
            (seen, d.timing.migrated)
        });
        for (g, (e_est, energies)) in want.iter().enumerate() {
            for (seen, _) in &out {
                assert!(close(seen[g].0, *e_est), "generation {g}: E_est {} vs {e_est} ({cargo:?}, {via:?})", seen[g].0);
            }
            let mut got: Vec<f64> = out.iter().flat_map(|(seen, _)| seen[g].1.clone()).collect();
            let mut energies = energies.clone();
            got.sort_by(f64::total_cmp);
            energies.sort_by(f64::total_cmp);
            assert_eq!(got.len(), 4);
            assert!(got.iter().zip(&energies).all(|(a, b)| close(*a, *b)), "generation {g}: walkers {got:?} vs {energies:?} ({cargo:?}, {via:?})");
        }
        out.iter().map(|o| o.1).sum()
    }

    /// A walker put into another slot comes out whole (every array, including the gradient rows that only the
    /// next sweep's drift reads), and a configuration put there and rebuilt comes out as the whole walker it was
    /// taken from: on the CPU and, where there is one, on the GPU (double and mixed).
    #[test]
    fn take_and_put_move_the_whole_walker_gpu_too_when_present() {
        let sys = Solid::carbon(16, 3).unwrap();
        let p = Params { tau: 0.02, dmc: true, recompute: 0, seed: 9, first: 0, delay: 4 };
        let mut e = CpuEngine::<f32, f64>::new(&sys, 3, p).unwrap();
        round_trip(&mut e, f32::EPSILON as f64);
        if let Some(gpu) = crate::gpu::for_test() {
            let setup = sys.setup.convert();
            round_trip(&mut GpuEngine::<f64, f64>::new(&gpu, &sys, &setup, 3, p).unwrap(), f64::EPSILON);
            let setup = sys.setup.convert();
            round_trip(&mut GpuEngine::<f32, f64>::new(&gpu, &sys, &setup, 3, p).unwrap(), f32::EPSILON as f64);
        }
    }

    /// `eps`: the storage's rounding unit. A rebuilt walker's rows are a fresh f64 re-inversion and orbital
    /// evaluation, as the engine's start made walker 0's, so they agree to the rounding of the storage (a few
    /// units: LU batches of another size may order their sums differently); stale rows would be off by O(1).
    fn round_trip<S: Real>(e: &mut dyn Engine<S>, eps: f64) {
        let (a, b) = (e.take(1, Cargo::Whole).unwrap(), e.take(2, Cargo::Whole).unwrap());
        assert_ne!(a, b);
        e.put(2, &a).unwrap();
        assert_eq!(e.take(2, Cargo::Whole).unwrap(), a);
        assert_eq!(e.energies()[2], a.parts.local());
        assert_eq!(e.take(1, Cargo::Whole).unwrap(), a, "the source stays");
        let whole = e.take(0, Cargo::Whole).unwrap();
        for cargo in [Cargo::Configuration, Cargo::Inverse] {
            // slot 2 holds walker 1's rows again first: rows left stale would be off by O(1)
            e.put(2, &a).unwrap();
            let c = e.take(0, cargo).unwrap();
            assert_eq!((c.dpsi.len(), c.inv.is_empty()), (0, cargo == Cargo::Configuration));
            assert_eq!((&c.pos, &c.rot, c.parts, c.cond), (&whole.pos, &whole.rot, whole.parts, whole.cond));
            e.put(2, &c).unwrap();
            e.rebuild(&[2], cargo).unwrap();
            let got = e.take(2, Cargo::Whole).unwrap();
            assert_eq!((&got.pos, &got.rot, got.parts), (&whole.pos, &whole.rot, whole.parts));
            if cargo == Cargo::Inverse {
                assert_eq!(got.inv, whole.inv, "the inverse rows travel exactly");
            }
            for (name, x, y) in [("inverse", &got.inv, &whole.inv), ("gradient", &got.dpsi, &whole.dpsi)] {
                let scale = y.iter().fold(0.0f64, |m, v| m.max(v.f64().abs()));
                let err = x.iter().zip(y).map(|(p, q)| (p.f64() - q.f64()).abs()).fold(0.0f64, f64::max);
                assert!(err <= 8.0 * eps * scale, "{cargo:?}: rebuilt {name} rows differ by {err:.2e} (scale {scale:.2e})");
            }
            assert_eq!(e.energies()[2], whole.parts.local());
        }
    }
}
