//! One walker of the solid as it travels between ranks, packed to bytes for the migration: its whole state
//! (positions, rotations, energies, inverse and gradient rows), or less (`ranks::Cargo`): the inverse rows without
//! the gradient rows, or its configuration alone, and the receiving engine rebuilds the rest from the positions.
//! The rows travel in the engine's storage type S (f32 in mixed precision), as they lie in its memory: no
//! conversion on either side, half the bytes of f64 in mixed. Between threads ranks of one process, each with its
//! GPU, the arrays need not travel at all: the walker carries where they lie on the sending GPU (`device`) and the
//! receiving GPU copies them device to device. Below both engines and the ranks that move it.

use super::Parts;
use crate::pseudopotential::slab::DeviceBytes;
use crate::ensemble::pack::{put_f64, put_f64s, put_reals, put_u64, reals_len, Pack, Reader, Truncated};
use crate::Real;

/// One walker's whole state, or part of it (`inv` and `dpsi`, or `dpsi` alone, empty), as it travels between ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Walker<S> {
    pub pos: Vec<f64>,
    pub rot: Vec<f64>,
    pub parts: Parts,
    /// Inverse rows `[electron][stride]`, in storage.
    pub inv: Vec<S>,
    /// Gradient rows `[electron][xyz][stride]`, in storage.
    pub dpsi: Vec<S>,
    /// Condition number at its last f64 re-inversion (`conditioning::reinverts` goes on deciding with it).
    pub cond: f64,
    /// Where its arrays lie on a GPU of this process, staged there for the receiver to copy (the arrays above are
    /// then empty); None: the arrays travel with it.
    pub device: Option<DeviceBytes>,
}

impl<S: Real> Pack for Walker<S> {
    type Context = ();
    fn pack(&self, out: &mut Vec<u8>) {
        put_f64s(out, &self.pos);
        put_f64s(out, &self.rot);
        put_reals(out, &self.inv);
        put_reals(out, &self.dpsi);
        for x in [self.parts.kinetic, self.parts.coulomb, self.parts.nonlocal, self.cond] {
            put_f64(out, x);
        }
        let d = self.device.map_or([0; 4], |d| [1, d.ptr, d.ctx, d.len]);
        d.into_iter().for_each(|x| put_u64(out, x));
    }
    fn packed_len(&self) -> usize {
        reals_len::<f64>(self.pos.len()) + reals_len::<f64>(self.rot.len()) + reals_len::<S>(self.inv.len()) + reals_len::<S>(self.dpsi.len()) + 64
    }
    fn unpack(_: &(), r: &mut Reader) -> Result<Walker<S>, Truncated> {
        let (pos, rot, inv, dpsi) = (r.f64s()?, r.f64s()?, r.reals()?, r.reals()?);
        let parts = Parts { kinetic: r.f64()?, coulomb: r.f64()?, nonlocal: r.f64()? };
        let cond = r.f64()?;
        let [flag, ptr, ctx, len] = [r.u64()?, r.u64()?, r.u64()?, r.u64()?];
        let device = (flag == 1).then_some(DeviceBytes { ptr, ctx, len });
        Ok(Walker { pos, rot, parts, inv, dpsi, cond, device })
    }
}

impl<S: Real> Walker<S> {
    /// The inverse rows in f64 (for the checks against the reference).
    pub fn inv_f64(&self) -> Vec<f64> {
        self.inv.iter().map(|x| x.f64()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::pack::{frames, pack_all, unpack_all};

    /// A walker with f32 rows packs to its exact size and comes back bit for bit; its rows take 4 bytes a value.
    #[test]
    fn a_walker_travels_whole_in_its_storage_type() {
        let w = Walker::<f32> {
            pos: vec![0.5, -1.25, 3.0],
            rot: vec![1.0; 9],
            parts: Parts { kinetic: 1.5, coulomb: -2.0, nonlocal: 0.25 },
            inv: vec![0.1, 1e-30, -7.0, f32::MAX],
            dpsi: vec![],
            cond: 12.5,
            device: None,
        };
        let mut one = vec![];
        w.pack(&mut one);
        assert_eq!(one.len(), w.packed_len());
        assert_eq!(w.packed_len(), 8 + 24 + 8 + 72 + 8 + 16 + 8 + 32 + 32);
        let staged = Walker { pos: vec![], rot: vec![], inv: vec![], device: Some(DeviceBytes { ptr: 1 << 40, ctx: 77, len: 4096 }), ..w.clone() };
        let back: Vec<Walker<f32>> = unpack_all(&(), &frames(&pack_all(&[w.clone(), staged.clone()])).unwrap()).unwrap();
        assert_eq!(back, [w, staged]);
    }
}
