//! N ranks as threads of one process: sums through shared slots read in rank order (so every rank gets the same
//! bits, and the same bits as an MPI run summing in rank order would), messages through channels. A started sum
//! ([`Comm::start_sum`]) leaves the rank's vector in a table under the sum's number; a rank finishes it as soon as
//! every rank has left its vector there, whatever the others do next.

use super::{in_rank_order, Comm, Pending};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier, Condvar, Mutex};

struct Shared {
    barrier: Barrier,
    slots: Mutex<Vec<Vec<f64>>>,
    /// Started sums by number: each rank's vector (None until it starts it) and how many ranks finished it.
    started: Mutex<HashMap<u64, (Vec<Option<Vec<f64>>>, usize)>>,
    /// Signalled whenever a rank starts a sum.
    arrived: Condvar,
}

/// One rank of a group of threads.
pub struct Threads {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
    /// to[r] sends to rank r; from[r] receives from rank r.
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Mutex<Receiver<Vec<u8>>>>,
    /// Sums this rank started.
    starts: AtomicU64,
}

impl Threads {
    /// The handles of a group of `n` ranks, one per thread.
    pub fn group(n: usize) -> Vec<Threads> {
        let shared = Arc::new(Shared { barrier: Barrier::new(n), slots: Mutex::new(vec![vec![]; n]), started: Mutex::default(), arrived: Condvar::new() });
        // channel (s, d) carries messages from rank s to rank d
        let mut senders: Vec<Vec<Sender<Vec<u8>>>> = (0..n).map(|_| Vec::with_capacity(n)).collect();
        let mut receivers: Vec<Vec<Mutex<Receiver<Vec<u8>>>>> = (0..n).map(|_| Vec::with_capacity(n)).collect();
        for to in senders.iter_mut() {
            for from in receivers.iter_mut() {
                let (tx, rx) = channel();
                to.push(tx);
                from.push(Mutex::new(rx));
            }
        }
        senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (to, from))| Threads { rank, size: n, shared: shared.clone(), to, from, starts: AtomicU64::new(0) })
            .collect()
    }

    /// Run `f` on `n` ranks, one thread each, and return what each rank returned, in rank order. A rank that panics
    /// stops the process with its message (the others would otherwise wait for it forever).
    pub fn run<R: Send>(n: usize, f: impl Fn(&Threads) -> R + Sync) -> Vec<R> {
        let f = &f;
        std::thread::scope(|s| {
            let handles: Vec<_> = Threads::group(n)
                .into_iter()
                .map(|c| {
                    s.spawn(move || match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&c))) {
                        Ok(r) => r,
                        Err(e) => {
                            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                            c.abort(&format!("rank {} failed: {}", c.rank, msg.unwrap_or_default()))
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a rank thread")).collect()
        })
    }
}

impl Comm for Threads {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn sum(&self, x: &mut [f64]) {
        self.shared.slots.lock().unwrap()[self.rank] = x.to_vec();
        self.shared.barrier.wait();
        {
            let slots = self.shared.slots.lock().unwrap();
            x.copy_from_slice(&in_rank_order(slots.iter().map(|s| &s[..])));
        }
        // nobody writes its slot for the next sum before everyone has read this one
        self.shared.barrier.wait();
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        self.to[to].send(bytes).expect("the receiving rank is alive");
    }
    fn recv(&self, from: usize) -> Vec<u8> {
        self.from[from].lock().unwrap().recv().expect("the sending rank is alive")
    }
    fn barrier(&self) {
        self.shared.barrier.wait();
    }
    fn abort(&self, msg: &str) -> ! {
        eprintln!("error: {msg}");
        std::process::exit(2)
    }
    fn transport(&self) -> &'static str {
        "threads"
    }
    fn start_sum(&self, x: Vec<f64>) -> Pending {
        let n = self.starts.fetch_add(1, Ordering::Relaxed);
        let mut started = self.shared.started.lock().unwrap();
        started.entry(n).or_insert_with(|| (vec![None; self.size], 0)).0[self.rank] = Some(x);
        self.shared.arrived.notify_all();
        Pending::Threads(n)
    }
    fn finish_sum(&self, p: Pending) -> Vec<f64> {
        let Pending::Threads(n) = p else { panic!("a sum started on another transport") };
        let ready = |t: &mut HashMap<u64, (Vec<Option<Vec<f64>>>, usize)>| t.get(&n).is_some_and(|e| e.0.iter().all(|v| v.is_some()));
        let mut started = self.shared.arrived.wait_while(self.shared.started.lock().unwrap(), |t| !ready(t)).unwrap();
        let entry = started.get_mut(&n).expect("a started sum");
        let x = in_rank_order(entry.0.iter().map(|v| v.as_deref().expect("every rank started it")));
        entry.1 += 1;
        if entry.1 == self.size {
            started.remove(&n);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_the_same_on_every_rank_and_messages_arrive_in_order() {
        let out = Threads::run(3, |c| {
            let mut x = vec![c.rank() as f64 + 0.1, 1.0];
            c.sum(&mut x);
            // a ring: each rank sends two messages to the next and reads two from the previous
            let (next, prev) = ((c.rank() + 1) % 3, (c.rank() + 2) % 3);
            c.send(next, vec![c.rank() as u8, 1]);
            c.send(next, vec![c.rank() as u8, 2]);
            let got = [c.recv(prev), c.recv(prev)];
            c.barrier();
            (x, got)
        });
        for (r, (x, got)) in out.iter().enumerate() {
            assert_eq!(x, &out[0].0);
            assert_eq!(x[1], 3.0);
            assert!((x[0] - 3.3).abs() < 1e-12);
            let prev = ((r + 2) % 3) as u8;
            assert_eq!(got, &[vec![prev, 1], vec![prev, 2]]);
        }
    }

    /// A started sum is finished by a rank while another rank that started it has not yet asked for it: rank 2 waits
    /// for rank 0's word that it has both sums before it finishes its own (a sum that needed every rank in
    /// `finish_sum` would hang here). Two sums in flight at once come back in the order started, the same bits on
    /// every rank, and each is the blocking sum's.
    #[test]
    fn a_started_sum_finishes_without_waiting_for_the_others_to_finish_it() {
        let out = Threads::run(3, |c| {
            let r = c.rank() as f64;
            let first = c.start_sum(vec![r + 0.1, 1.0]);
            let second = c.start_sum(vec![10.0 * r]);
            let got = if c.rank() == 2 {
                let word = c.recv(0);
                assert_eq!(word, vec![7]);
                (c.finish_sum(first), c.finish_sum(second))
            } else {
                let got = (c.finish_sum(first), c.finish_sum(second));
                if c.rank() == 0 {
                    c.send(2, vec![7]);
                }
                got
            };
            let mut blocking = vec![r + 0.1, 1.0];
            c.sum(&mut blocking);
            (got, blocking)
        });
        for ((first, second), blocking) in &out {
            assert_eq!(first, &out[0].0 .0);
            assert_eq!(first, blocking, "the started sum is the blocking one, bit for bit");
            assert_eq!(first[1], 3.0);
            assert_eq!(second, &vec![30.0]);
        }
    }
}
