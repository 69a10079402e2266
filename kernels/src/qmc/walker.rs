//! A walker (one configuration of all electrons with its wavefunction state) and the move both VMC and DMC make:
//! a sweep of single-electron drift-diffusion proposals, each accepted by Metropolis-Hastings with the ratio of the
//! drift-diffusion Green's functions, so the walk samples |psi_T|^2 exactly whatever the time step.

use crate::ensemble::pack::{put_f64, Pack, Reader, Truncated};
use super::{add, dot, kinetic, local_energy, scale, sub, System, Wavefunction, V3};
use crate::ensemble::moves::{drift, MoveStats};
use crate::rng::{gaussian3, Rng64};
use rand::Rng;

/// One configuration with its wavefunction state and measured quantities.
#[derive(Clone)]
pub struct Walker {
    pub r: Vec<V3>,
    pub wf: Wavefunction,
    /// Local energy at r (valid after `measure`).
    pub e_local: f64,
    grad: Vec<V3>,
    lap: Vec<f64>,
}

impl Walker {
    pub fn new(sys: &System, r: Vec<V3>) -> Walker {
        let n = r.len();
        let mut w = Walker { r, wf: sys.trial.clone(), e_local: 0.0, grad: vec![[0.0; 3]; n], lap: vec![0.0; n] };
        w.measure(sys);
        w
    }

    /// Full evaluation at the current positions: the local energy.
    pub fn measure(&mut self, sys: &System) {
        self.wf.evaluate(&self.r, &mut self.grad, &mut self.lap);
        self.e_local = local_energy(sys.precision, &*sys.hamiltonian, &self.r, &self.grad, &self.lap);
    }

    /// The local kinetic energy -1/2 sum_i (lap_i ln psi + |grad_i ln psi|^2) at the last `measure`, in the
    /// system's precision.
    pub fn kinetic(&self, sys: &System) -> f64 {
        kinetic(sys.precision, &self.grad, &self.lap)
    }

    /// One drift-diffusion proposal per electron, in order. With `fixed_node`, a move that changes the sign of
    /// psi_T is rejected (DMC); VMC keeps it when Metropolis accepts it.
    pub fn sweep(&mut self, tau: f64, fixed_node: bool, rng: &mut Rng64) -> MoveStats {
        let mut s = MoveStats::default();
        for i in 0..self.r.len() {
            let old = self.r[i];
            let chi = scale(tau.sqrt(), gaussian3(rng));
            let new = add(add(old, drift(self.wf.grad(&self.r, i), tau)), chi);
            let (ratio, g_new) = self.wf.ratio_grad(&self.r, i, new);
            let dr2 = dot(sub(new, old), sub(new, old));
            s.attempted += 1;
            s.r2_proposed += dr2;
            if !(ratio.is_finite() && ratio != 0.0) || (fixed_node && ratio < 0.0) {
                continue;
            }
            // ln G(old <- new) - ln G(new <- old), with G(b <- a) = exp(-|b - a - tau v_bar(a)|^2 / 2 tau)
            let back = sub(sub(old, new), drift(g_new, tau));
            let log_green = (dot(chi, chi) - dot(back, back)) / (2.0 * tau);
            let log_accept = 2.0 * ratio.abs().ln() + log_green;
            if log_accept >= 0.0 || rng.random::<f64>() < log_accept.exp() {
                self.wf.accept(&self.r, i, new);
                self.r[i] = new;
                s.accepted += 1;
                s.r2_accepted += dr2;
            }
        }
        s
    }

}

/// A walker travels as its positions: everything else (the wavefunction's cached state, the local energy) is a
/// function of them that `measure` recomputes from scratch, so the rebuilt walker is bit-identical to the sent one.
impl Pack for Walker {
    type Context = System;
    fn pack(&self, out: &mut Vec<u8>) {
        for x in self.r.iter().flatten() {
            put_f64(out, *x);
        }
    }
    fn unpack(sys: &System, bytes: &mut Reader) -> Result<Walker, Truncated> {
        let r = (0..sys.n_electrons).map(|_| Ok([bytes.f64()?, bytes.f64()?, bytes.f64()?])).collect::<Result<Vec<V3>, Truncated>>()?;
        if !bytes.rest.is_empty() {
            return Err(Truncated);
        }
        Ok(Walker::new(sys, r))
    }
}
