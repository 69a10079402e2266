//! The ranks of an `mpirun` launch, through the `mpi` crate (rsmpi; cargo feature `mpi`, which needs an MPI library
//! and libclang at build time).
//!
//! A rank that waits (for the slowest rank's sum, a message, a barrier) naps between polls of a non-blocking call
//! instead of sitting in MPI's blocking one, which busy-polls: with one rank bound to each core, the cores that wait
//! then idle, as the threads transport's waiting threads do, rather than run flat out beside the ones still computing
//! (`QMC_MPI_WAIT=spin` restores MPI's blocking calls, for comparison).

use super::Comm;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::{Duration, Instant};

/// How a rank waits: polls back to back for the first `SPIN` (most sums complete within it when the ranks are level,
/// and a nap would only add its length), then naps `NAP` between polls. A nap lasts NAP plus the kernel's timer slack
/// (50 us by default), which delays a long wait's end by that much at most: small beside the milliseconds a rank
/// waits for the slowest.
const SPIN: Duration = Duration::from_micros(50);
const NAP: Duration = Duration::from_micros(20);

/// Poll `test` until it yields, first back to back, then napping between polls (see `SPIN`).
fn wait<T>(mut test: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = test() {
            return t;
        }
        if start.elapsed() < SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(NAP);
        }
    }
}

/// This process's rank in MPI_COMM_WORLD.
pub struct Mpi {
    world: SimpleCommunicator,
    local_rank: usize,
    /// `QMC_MPI_WAIT=spin`: MPI's blocking calls (which busy-poll) rather than naps between polls.
    spin: bool,
    // MPI_Finalize runs when the universe is dropped, after the last use of `world`
    _universe: Universe,
}

impl Mpi {
    /// Initialise MPI when this process was launched by mpirun/mpiexec/srun with more than one rank; None when it
    /// runs alone (then the other transports apply) or MPI was initialised already.
    pub fn launched() -> Option<Mpi> {
        let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_NTASKS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        if !launched {
            return None;
        }
        let universe = mpi::initialize()?;
        let world = universe.world();
        // the rank among the processes of this host picks the GPU: ranks sharing memory form one communicator
        let local_rank = world.split_shared(world.rank()).rank() as usize;
        let spin = std::env::var("QMC_MPI_WAIT").is_ok_and(|v| v == "spin");
        Some(Mpi { world, local_rank, spin, _universe: universe })
    }
}

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn sum(&self, x: &mut [f64]) {
        let mine = x.to_vec();
        if self.spin {
            return self.world.all_reduce_into(&mine[..], x, SystemOperation::sum());
        }
        mpi::request::scope(|scope| {
            let mut pending = Some(self.world.immediate_all_reduce_into(scope, &mine[..], x, SystemOperation::sum()));
            wait(|| match pending.take().expect("polled until done").test() {
                Ok(_) => Some(()),
                Err(r) => {
                    pending = Some(r);
                    None
                }
            })
        })
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        self.world.process_at_rank(to as i32).send(&bytes[..]);
    }
    fn recv(&self, from: usize) -> Vec<u8> {
        let from = self.world.process_at_rank(from as i32);
        if self.spin {
            return from.receive_vec::<u8>().0;
        }
        wait(|| from.immediate_matched_probe()).matched_receive_vec::<u8>().0
    }
    fn barrier(&self) {
        if self.spin {
            return self.world.barrier();
        }
        let mut pending = Some(self.world.immediate_barrier());
        wait(|| match pending.take().expect("polled until done").test() {
            Ok(_) => Some(()),
            Err(r) => pending.replace(r).and(None),
        })
    }
    fn abort(&self, msg: &str) -> ! {
        eprintln!("error: rank {} of {}: {msg}", self.rank(), self.size());
        self.world.abort(2)
    }
    fn local_rank(&self) -> usize {
        self.local_rank
    }
    fn transport(&self) -> &'static str {
        "mpi"
    }
}
