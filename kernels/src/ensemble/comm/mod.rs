//! How ranks talk: a small message-passing interface with three transports.
//!
//! - [`Solo`]: one rank, no communication (the default run).
//! - [`Threads`]: N ranks as threads of one process, over shared memory. It lets the default build and CI exercise
//!   every multi-rank code path without an MPI library, and lets one process drive several GPUs, one thread each.
//! - `Mpi` (cargo feature `mpi`, the `mpi` crate): the ranks of an `mpirun` launch.
//!
//! The driver needs only element-wise sums (energies, weights, populations), point-to-point byte messages (walker
//! migration, checkpoint gathering), a barrier and an abort. Sums come back bit-identical on every rank, so every
//! rank takes the same decisions (trial energy, branching counts) from them. A sum can also be started and finished
//! later ([`Comm::start_sum`]), so that a rank computes while the others catch up.

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
    /// Start an element-wise sum of `x` over all ranks and return at once, without waiting for the other ranks;
    /// [`Comm::finish_sum`] gives the sum. Every rank starts its sums in the same order, and finishes them in the
    /// order started. The sum is the ranks' vectors added in rank order, the same bits on every rank. Threads and MPI
    /// start it for real (a rank that has started this sum may finish it without the others' help, once each has
    /// started it: see `lagged` DMC, `ensemble::dmc`); by default it is the blocking [`Comm::sum`].
    fn start_sum(&self, x: Vec<f64>) -> Pending {
        let mut x = x;
        self.sum(&mut x);
        Pending::Done(x)
    }
    /// The sum of a [`Comm::start_sum`] of this rank, once every rank has started it (blocks until then).
    fn finish_sum(&self, p: Pending) -> Vec<f64> {
        match p {
            Pending::Done(x) => x,
            _ => panic!("a sum started on another transport"),
        }
    }
}

/// The ranks' vectors `parts` (in rank order, of one length) added in that order: the one order every transport
/// sums in, so every rank gets the same bits.
pub(crate) fn in_rank_order<'a>(mut parts: impl Iterator<Item = &'a [f64]>) -> Vec<f64> {
    let mut x = parts.next().expect("one rank at least").to_vec();
    for p in parts {
        for (a, b) in x.iter_mut().zip(p) {
            *a += b;
        }
    }
    x
}

/// A sum over ranks in flight ([`Comm::start_sum`]).
pub enum Pending {
    /// Already summed (the blocking default).
    Done(Vec<f64>),
    /// The `n`-th sum this rank started over thread ranks.
    Threads(u64),
    #[cfg(feature = "mpi")]
    Mpi(mpi::InFlight),
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pending::Done(x) => write!(f, "Pending::Done({} values)", x.len()),
            Pending::Threads(n) => write!(f, "Pending::Threads({n})"),
            #[cfg(feature = "mpi")]
            Pending::Mpi(_) => write!(f, "Pending::Mpi"),
        }
    }
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

/// The ranks this process runs: what a driver's `--ranks` option (or an `mpirun` launch) chooses.
pub enum Ranks {
    Solo,
    /// N ranks as threads of this process.
    Threads(usize),
    /// This process's rank of an MPI launch.
    #[cfg(feature = "mpi")]
    Mpi(mpi::Mpi),
}

impl Ranks {
    /// MPI when launched by mpirun with the `mpi` feature, else `threads` ranks as threads (one: Solo).
    pub fn choose(threads: usize) -> Result<Ranks, String> {
        #[cfg(feature = "mpi")]
        if let Some(m) = mpi::Mpi::launched() {
            if threads > 1 {
                return Err(format!("--ranks {threads} asks for threads inside an MPI launch of {} ranks: use one or the other", m.size()));
            }
            return Ok(Ranks::Mpi(m));
        }
        Ok(match threads {
            0 => return Err("--ranks must be at least 1".into()),
            1 => Ranks::Solo,
            n => Ranks::Threads(n),
        })
    }
    /// Ranks in all.
    pub fn size(&self) -> usize {
        match self {
            Ranks::Solo => 1,
            Ranks::Threads(n) => *n,
            #[cfg(feature = "mpi")]
            Ranks::Mpi(m) => m.size(),
        }
    }
    /// Whether this process holds rank 0 (the one that prints and records).
    pub fn root(&self) -> bool {
        match self {
            #[cfg(feature = "mpi")]
            Ranks::Mpi(m) => m.rank() == 0,
            _ => true,
        }
    }
    pub fn transport(&self) -> &'static str {
        match self {
            Ranks::Solo => "solo",
            Ranks::Threads(_) => "threads",
            #[cfg(feature = "mpi")]
            Ranks::Mpi(_) => "mpi",
        }
    }
    /// Whether a rank waits for the others asleep (an MPI launch with QMC_MPI_WAIT=sleep) rather than polling.
    pub fn sleeps(&self) -> bool {
        match self {
            #[cfg(feature = "mpi")]
            Ranks::Mpi(m) => m.sleeps(),
            _ => false,
        }
    }
    /// Run `f` on every rank this process holds (all of them for threads, its own for MPI), with the rank's slot
    /// among them; the results in slot order.
    pub fn each<R: Send>(&self, f: impl Fn(&dyn Comm, usize) -> R + Sync) -> Vec<R> {
        match self {
            Ranks::Solo => vec![f(&Solo, 0)],
            Ranks::Threads(n) => Threads::run(*n, |c| f(c, c.rank())),
            #[cfg(feature = "mpi")]
            Ranks::Mpi(m) => vec![f(m, 0)],
        }
    }
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
