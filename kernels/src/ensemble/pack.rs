//! Walkers and run state as bytes: what crosses between ranks (migration) and goes to disk (checkpoints).
//! Little-endian, fixed widths; a reader that runs out of bytes says so instead of panicking.

use crate::Real;

/// Something that travels as bytes: a walker (positions and whatever cannot be recomputed from them) or the
/// driver's state. `Context` is what rebuilding needs (for a QMC walker, the system and its trial function).
pub trait Pack: Sized {
    type Context: ?Sized + Sync;
    fn pack(&self, out: &mut Vec<u8>);
    /// Bytes `pack` will write, if known: the buffer is then grown once (a migrating walker of the synthetic solid
    /// is a megabyte).
    fn packed_len(&self) -> usize {
        0
    }
    fn unpack(ctx: &Self::Context, bytes: &mut Reader) -> Result<Self, Truncated>;
}

/// The bytes ended before the value did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated;

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}
/// A length and the values. Written into a buffer grown once: a migrating walker of the synthetic solid carries
/// millions of values, and one push per value cost about four times as long (6 ms per 4 MB on the build machine).
pub fn put_f64s(out: &mut Vec<u8>, v: &[f64]) {
    put_reals(out, v);
}
/// A length and the values, each in its own width (f32 or f64): rows stored in f32 travel in f32.
pub fn put_reals<T: Real>(out: &mut Vec<u8>, v: &[T]) {
    put_u64(out, v.len() as u64);
    let start = out.len();
    out.resize(start + T::BYTES * v.len(), 0);
    for (b, &x) in out[start..].chunks_exact_mut(T::BYTES).zip(v) {
        x.write_le(b);
    }
}
/// Bytes `put_reals` writes for `n` values.
pub fn reals_len<T: Real>(n: usize) -> usize {
    8 + T::BYTES * n
}
pub fn put_bytes(out: &mut Vec<u8>, v: &[u8]) {
    put_u64(out, v.len() as u64);
    out.extend_from_slice(v);
}

/// Reads what the `put_*` functions wrote, in the same order.
pub struct Reader<'a> {
    pub rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        if self.rest.len() < n {
            return Err(Truncated);
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn f64(&mut self) -> Result<f64, Truncated> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    /// A length that must fit in the bytes left (a corrupt length must not allocate terabytes).
    fn len(&mut self, width: usize) -> Result<usize, Truncated> {
        let n = self.u64()? as usize;
        if !n.checked_mul(width).is_some_and(|b| b <= self.rest.len()) {
            return Err(Truncated);
        }
        Ok(n)
    }
    pub fn f64s(&mut self) -> Result<Vec<f64>, Truncated> {
        self.reals()
    }
    /// What `put_reals` wrote.
    pub fn reals<T: Real>(&mut self) -> Result<Vec<T>, Truncated> {
        let n = self.len(T::BYTES)?;
        Ok(self.take(T::BYTES * n)?.chunks_exact(T::BYTES).map(T::read_le).collect())
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], Truncated> {
        let n = self.len(1)?;
        self.take(n)
    }
}

/// Items framed one after another (each length-prefixed), so that any run of them can be cut out and sent on.
/// Each item is packed in place, its length written in front of it afterwards: no copy of a packed item.
pub fn pack_all<W: Pack>(items: &[W]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + items.iter().map(|w| 8 + w.packed_len()).sum::<usize>());
    put_u64(&mut out, items.len() as u64);
    for w in items {
        let at = out.len();
        put_u64(&mut out, 0);
        w.pack(&mut out);
        let len = (out.len() - at - 8) as u64;
        out[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }
    out
}

/// The framed items of `pack_all`, each as its own byte slice.
pub fn frames(bytes: &[u8]) -> Result<Vec<&[u8]>, Truncated> {
    let mut r = Reader::new(bytes);
    let n = r.len(8)?;
    (0..n).map(|_| r.bytes()).collect()
}

/// Rebuild framed items (in parallel: rebuilding a walker re-evaluates its wavefunction).
pub fn unpack_all<W: Pack + Send>(ctx: &W::Context, frames: &[&[u8]]) -> Result<Vec<W>, Truncated> {
    use rayon::prelude::*;
    frames.par_iter().map(|f| W::unpack(ctx, &mut Reader::new(f))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_short_input_is_caught() {
        let mut b = vec![];
        put_u64(&mut b, 7);
        put_f64s(&mut b, &[1.5, -0.0, f64::MAX]);
        put_reals(&mut b, &[0.1f32, f32::MIN_POSITIVE]);
        put_bytes(&mut b, b"he");
        assert_eq!(b.len(), 8 + reals_len::<f64>(3) + reals_len::<f32>(2) + 8 + 2, "f32 values travel in 4 bytes");
        let mut r = Reader::new(&b);
        assert_eq!(r.u64(), Ok(7));
        assert_eq!(r.f64s().unwrap(), [1.5, -0.0, f64::MAX]);
        assert_eq!(r.reals::<f32>().unwrap(), [0.1f32, f32::MIN_POSITIVE]);
        assert_eq!(r.bytes(), Ok(&b"he"[..]));
        assert!(r.rest.is_empty());
        for cut in 0..b.len() {
            let mut r = Reader::new(&b[..cut]);
            assert!(r.u64().and_then(|_| r.f64s()).and_then(|_| r.reals::<f32>()).and_then(|_| r.bytes()).is_err(), "cut at {cut}");
        }
        // a huge length in corrupt input is refused, not allocated
        let mut big = vec![];
        put_u64(&mut big, u64::MAX / 2);
        assert_eq!(Reader::new(&big).f64s(), Err(Truncated));
    }

    /// Items packed in place come back framed, each whole, whatever size hint they give.
    #[test]
    fn framed_items_come_back_one_by_one() {
        struct Item(Vec<f64>, usize);
        impl Pack for Item {
            type Context = ();
            fn pack(&self, out: &mut Vec<u8>) {
                put_f64s(out, &self.0);
            }
            fn packed_len(&self) -> usize {
                self.1
            }
            fn unpack(_: &(), r: &mut Reader) -> Result<Item, Truncated> {
                Ok(Item(r.f64s()?, 0))
            }
        }
        let items = [Item(vec![1.0, 2.0], 24), Item(vec![], 0), Item(vec![-3.5; 5], 3)];
        let bytes = pack_all(&items);
        let back: Vec<Item> = unpack_all(&(), &frames(&bytes).unwrap()).unwrap();
        assert_eq!(back.iter().map(|i| i.0.clone()).collect::<Vec<_>>(), items.iter().map(|i| i.0.clone()).collect::<Vec<_>>());
        assert!(frames(&bytes[..bytes.len() - 1]).is_err());
    }
}
