//! The ranks of an `mpirun` launch, through the `mpi` crate (rsmpi; cargo feature `mpi`, which needs an MPI library
//! and libclang at build time).

use super::{Comm, Pending};
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::os::raw::c_int;

/// The tag of a started sum's messages (walker migration's messages use tag 0, so neither takes the other's).
const SUM_TAG: c_int = 0x5a3;

/// A started sum: this rank's vector sent to every other rank and theirs being received, point to point
/// (`MPI_Isend`, `MPI_Irecv`), then added in rank order. A non-blocking collective (`MPI_Iallreduce`) would be
/// fewer messages, but Open MPI advances one only inside MPI calls: its rounds would wait for each rank to finish
/// its next generation, which is what the started sum is for avoiding. Small messages are sent eagerly and land at
/// the receiver whatever it is doing. P - 1 messages a rank: fine for the tens of ranks of one host; a tree with
/// a progress thread would serve thousands.
pub struct InFlight {
    mine: Box<[f64]>,
    theirs: Box<[f64]>,
    requests: Vec<ffi::MPI_Request>,
}

// SAFETY: the requests are opaque handles that only `finish_sum` uses, taking the InFlight by value; a DMC run holding
// one may move between threads or be shared by reference (the engines' rayon loops read its other fields), neither of
// which touches them.
unsafe impl Send for InFlight {}
unsafe impl Sync for InFlight {}

/// How a rank waits for the others' part of a sum (environment QMC_MPI_WAIT): `spin`, MPI's own wait (the
/// default), which polls on the rank's core until the last part arrives; or `sleep`, a test every [`NAP`] with
/// the core given up between (the sum then goes point to point in rank order, as a started sum does). On a host
/// whose cores are hyperthreads of a larger machine (a virtual machine's vCPUs), a rank polling through another's
/// slow generation takes a share of the core its sibling computes on (issue #24). Every rank must wait the same
/// way (the two sums differ in their messages): mpirun passes this host's environment to its ranks; across hosts,
/// `mpirun -x QMC_MPI_WAIT`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    Spin,
    Sleep,
}

/// The pause between two tests of a sleeping wait: Linux wakes a sleeper about 50 us late (its timer slack), so a
/// wait ends at most about 0.1 ms after its last part arrives, against waits of milliseconds.
const NAP: std::time::Duration = std::time::Duration::from_micros(20);

/// This process's rank in MPI_COMM_WORLD.
pub struct Mpi {
    world: SimpleCommunicator,
    local_rank: usize,
    wait: Wait,
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
        let wait = match std::env::var("QMC_MPI_WAIT").as_deref() {
            Err(_) | Ok("spin") => Wait::Spin,
            Ok("sleep") => Wait::Sleep,
            Ok(v) => {
                eprintln!("error: QMC_MPI_WAIT={v}: a rank waits by spin (MPI's own wait, the default) or sleep");
                std::process::exit(2);
            }
        };
        let universe = mpi::initialize()?;
        let world = universe.world();
        // the rank among the processes of this host picks the GPU: ranks sharing memory form one communicator
        let local_rank = world.split_shared(world.rank()).rank() as usize;
        Some(Mpi { world, local_rank, wait, _universe: universe })
    }

    /// Whether this rank waits for the others asleep ([`Wait`]).
    pub fn sleeps(&self) -> bool {
        self.wait == Wait::Sleep
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
        if self.wait == Wait::Sleep {
            let total = self.finish_sum(self.start_sum(x.to_vec()));
            x.copy_from_slice(&total);
            return;
        }
        let mine = x.to_vec();
        self.world.all_reduce_into(&mine[..], x, SystemOperation::sum());
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        self.world.process_at_rank(to as i32).send(&bytes[..]);
    }
    fn recv(&self, from: usize) -> Vec<u8> {
        self.world.process_at_rank(from as i32).receive_vec::<u8>().0
    }
    fn barrier(&self) {
        self.world.barrier();
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
    fn start_sum(&self, x: Vec<f64>) -> Pending {
        let (me, size, n) = (self.rank(), self.size(), x.len());
        let mut f = InFlight { mine: x.into_boxed_slice(), theirs: vec![0.0; n * size].into_boxed_slice(), requests: vec![] };
        let comm = self.world.as_raw();
        // SAFETY: the buffers are boxed (their addresses do not move when `f` does) and live in `f` until
        // `finish_sum` has waited for every request; the counts are the slices' lengths.
        unsafe {
            for r in (0..size).filter(|&r| r != me) {
                let mut req = ffi::RSMPI_REQUEST_NULL;
                ffi::MPI_Irecv(f.theirs[r * n..].as_mut_ptr().cast(), n as c_int, ffi::RSMPI_DOUBLE, r as c_int, SUM_TAG, comm, &mut req);
                f.requests.push(req);
                let mut req = ffi::RSMPI_REQUEST_NULL;
                ffi::MPI_Isend(f.mine.as_ptr().cast(), n as c_int, ffi::RSMPI_DOUBLE, r as c_int, SUM_TAG, comm, &mut req);
                f.requests.push(req);
            }
        }
        Pending::Mpi(f)
    }
    fn finish_sum(&self, p: Pending) -> Vec<f64> {
        let Pending::Mpi(mut f) = p else { panic!("a sum started on another transport") };
        let n = f.requests.len() as c_int;
        // SAFETY: the requests are this sum's, each completed once (MPI_Testall frees them only when all are done)
        unsafe {
            match self.wait {
                Wait::Spin => {
                    ffi::MPI_Waitall(n, f.requests.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE);
                }
                Wait::Sleep => loop {
                    let mut done: c_int = 0;
                    ffi::MPI_Testall(n, f.requests.as_mut_ptr(), &mut done, ffi::RSMPI_STATUSES_IGNORE);
                    if done != 0 {
                        break;
                    }
                    std::thread::sleep(NAP);
                },
            }
        }
        let (me, n) = (self.rank(), f.mine.len());
        // rank order, as every rank adds them
        let part = |r: usize| if r == me { &f.mine[..] } else { &f.theirs[r * n..(r + 1) * n] };
        super::in_rank_order((0..self.size()).map(part))
    }
}
