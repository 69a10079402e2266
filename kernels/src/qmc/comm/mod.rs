//! How ranks talk: a small message-passing interface with three transports.
//!
//! - [`Solo`]: one rank, no communication (the default run).
//! - [`Threads`]: N ranks as threads of one process, over shared memory. It lets the default build and CI exercise
//!   every multi-rank code path without an MPI library, and lets one process drive several GPUs, one thread each.
//! - `Mpi` (cargo feature `mpi`, the `mpi` crate): the ranks of an `mpirun` launch.
//!
//! The driver needs only element-wise sums (energies, weights, populations), point-to-point byte messages (walker
//! migration, checkpoint gathering), a barrier and an abort. Sums come back bit-identical on every rank, so every
//! rank takes the same decisions (trial energy, branching counts) from them.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod threads;

pub use threads::Threads;

/// One rank's view of the group of ranks running a simulation together.
pub trait Comm {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Element-wise sum of `x` over all ranks, left in `x` on every rank.
    fn sum(&self, x: &mut [f64]);
    /// Send a message to rank `to`. Messages from one rank to another arrive in the order sent.
    fn send(&self, to: usize, bytes: Vec<u8>);
    /// The next message from rank `from` (blocks until it arrives).
    fn recv(&self, from: usize) -> Vec<u8>;
    fn barrier(&self);
    /// Stop every rank with a message (a rank that cannot go on must not leave the others waiting forever).
    fn abort(&self, msg: &str) -> !;
    /// The index of this rank among those on the same host (the GPU it drives).
    fn local_rank(&self) -> usize {
        self.rank()
    }
    /// The transport's name, for records: "solo", "threads", "mpi".
    fn transport(&self) -> &'static str;
}

/// A single rank.
pub struct Solo;

impl Comm for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum(&self, _x: &mut [f64]) {}
    fn send(&self, to: usize, _bytes: Vec<u8>) {
        panic!("a single rank has no rank {to} to send to")
    }
    fn recv(&self, from: usize) -> Vec<u8> {
        panic!("a single rank has no rank {from} to receive from")
    }
    fn barrier(&self) {}
    fn abort(&self, msg: &str) -> ! {
        eprintln!("error: {msg}");
        std::process::exit(2)
    }
    fn transport(&self) -> &'static str {
        "solo"
    }
}

/// The first index and the number of the items rank `rank` of `size` holds when `total` items are spread as evenly
/// as possible, the first `total % size` ranks holding one more.
pub fn share(total: usize, rank: usize, size: usize) -> (usize, usize) {
    let (base, extra) = (total / size, total % size);
    (rank * base + rank.min(extra), base + (rank < extra) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_items_once_and_differ_by_at_most_one() {
        for (total, size) in [(10, 3), (2, 5), (0, 2), (1024, 16), (7, 1)] {
            let mut next = 0;
            for r in 0..size {
                let (first, n) = share(total, r, size);
                assert_eq!(first, next);
                assert!(n == total / size || n == total / size + 1);
                next += n;
            }
            assert_eq!(next, total);
        }
    }
}
