//! The ranks of an `mpirun` launch, through the `mpi` crate (rsmpi; cargo feature `mpi`, which needs an MPI library
//! and libclang at build time).

use super::Comm;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// This process's rank in MPI_COMM_WORLD.
pub struct Mpi {
    world: SimpleCommunicator,
    local_rank: usize,
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
        Some(Mpi { world, local_rank, _universe: universe })
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
}
