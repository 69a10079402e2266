//! One walker of the solid as it travels between ranks, packed to bytes for the migration: its whole state
//! (positions, rotations, energies, inverse and gradient rows, in f64), or its configuration alone (the inverse and
//! gradient rows empty), which the receiving engine rebuilds from the positions (`ranks::Cargo`). Below both engines
//! and the ranks that move it.

use super::Parts;
use crate::qmc::pack::{put_f64, put_f64s, Pack, Reader, Truncated};

/// One walker's whole state, or its configuration (`inv` and `dpsi` empty), as it travels between ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Walker {
    pub pos: Vec<f64>,
    pub rot: Vec<f64>,
    pub parts: Parts,
    pub inv: Vec<f64>,
    pub dpsi: Vec<f64>,
    /// Condition number at its last f64 re-inversion (`conditioning::reinverts` goes on deciding with it).
    pub cond: f64,
}

impl Pack for Walker {
    type Context = ();
    fn pack(&self, out: &mut Vec<u8>) {
        for v in [&self.pos, &self.rot, &self.inv, &self.dpsi] {
            put_f64s(out, v);
        }
        for x in [self.parts.kinetic, self.parts.coulomb, self.parts.nonlocal, self.cond] {
            put_f64(out, x);
        }
    }
    fn unpack(_: &(), r: &mut Reader) -> Result<Walker, Truncated> {
        let (pos, rot, inv, dpsi) = (r.f64s()?, r.f64s()?, r.f64s()?, r.f64s()?);
        let parts = Parts { kinetic: r.f64()?, coulomb: r.f64()?, nonlocal: r.f64()? };
        Ok(Walker { pos, rot, parts, inv, dpsi, cond: r.f64()? })
    }
}

