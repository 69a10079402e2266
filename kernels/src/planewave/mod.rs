//! Plane-wave orbitals: the Slater determinant of the homogeneous electron gas (paper 003's CASINO runs, the qmc
//! driver's `heg`, the solid engine's `Solid::electron_gas`), and the gas itself as a system description ([`heg`]:
//! its cell, closed shells, Hartree-Fock energy and Jastrow functors, which both drivers build on).
//!
//! The occupied states of one spin are the integer vectors n (k = 2 pi n / L in a cube of side L) of the `count`
//! smallest |n|^2, a closed shell ([`occupied`]: 1, 7, 19, 27, 33, 57, 81, ... per spin). The orbitals are real: 1
//! for k = 0, and cos(k.r), sin(k.r) for each pair +-k ([`plane_waves`]). A closed shell holds both k and -k, so these
//! span the space of the complex exp(ik.r) and the determinant differs by a constant factor only. Each orbital is an
//! eigenfunction of the Laplacian (-k^2), which is what makes the gas a check: the determinant's local kinetic energy
//! is sum_occupied k^2 / 2 at every configuration.
//!
//! Outputs: value, gradient and Laplacian of every orbital at a point, in two layouts: the qmc driver's
//! ([`PlaneWaves::vgl`]: v[j], g[d * n + j], l[j]) and the B-spline kernel's ([`PlaneWaves::evaluate_point`]:
//! `[component][stride]`, components value, gx, gy, gz, Laplacian, rows padded with zeros to `stride`), which the
//! solid engine reads whichever orbitals it runs. Cost per point and orbital: one sincos and about 12 flops
//! ([`flops`]); no table, so nothing is read but the k vectors: the kernel is bound by the sincos, not by memory.
//!
//! Precision: the arithmetic type T takes k and r rounded to T and evaluates in T (f64 in double and mixed).
//! [`reference`] is an independent f64 evaluation (exp(ik.r) as products of per-axis phases); [`gpu`] evaluates a
//! batch of points in one launch (planewave.cu) into the B-spline kernel's output layout.

pub mod gpu;
pub mod heg;
pub mod reference;
#[cfg(test)]
mod tests;

use crate::Real;
use std::f64::consts::TAU;

/// Real plane waves: (k, sine?) per orbital; (0, false) is the constant.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaneWaves {
    pub k: Vec<([f64; 3], bool)>,
}

impl PlaneWaves {
    pub fn len(&self) -> usize {
        self.k.len()
    }

    pub fn is_empty(&self) -> bool {
        self.k.is_empty()
    }

    /// Value, gradient and Laplacian of each orbital j at r, computed in T, handed to `f(j, value, gradient,
    /// laplacian)` in order. Inline, so each layout's caller compiles to one loop.
    #[inline(always)]
    pub fn each<T: Real>(&self, r: [f64; 3], mut f: impl FnMut(usize, T, [T; 3], T)) {
        let r = r.map(T::of);
        for (j, &(k, sine)) in self.k.iter().enumerate() {
            let k = k.map(T::of);
            let (s, c) = (k[0] * r[0] + k[1] * r[1] + k[2] * r[2]).sin_cos();
            // cos: grad -sin k; sin: grad cos k; both: lap = -k^2 value
            let (val, dval) = if sine { (s, c) } else { (c, -s) };
            f(j, val, [dval * k[0], dval * k[1], dval * k[2]], -(k[0] * k[0] + k[1] * k[1] + k[2] * k[2]) * val);
        }
    }

    /// Values v[j], gradients g[d * n + j] and Laplacians l[j] of the n orbitals at r, in T (the qmc driver's layout).
    pub fn vgl<T: Real>(&self, r: [f64; 3], v: &mut [T], g: &mut [T], l: &mut [T]) {
        let n = self.len();
        self.each::<T>(r, |j, val, grad, lap| {
            v[j] = val;
            for d in 0..3 {
                g[d * n + j] = grad[d];
            }
            l[j] = lap;
        });
    }

    /// VGL at one point into `out`, `[component][stride]` (value, gx, gy, gz, Laplacian; entries from `len()` to
    /// `stride` zero): the B-spline kernel's output layout, on the calling thread, allocating nothing.
    #[inline(always)]
    pub fn evaluate_point<A: Real>(&self, r: [f64; 3], stride: usize, out: &mut [A]) {
        let n = self.len();
        assert!(n <= stride && out.len() == 5 * stride, "planewave: output length");
        self.each::<A>(r, |j, val, grad, lap| {
            out[j] = val;
            out[stride + j] = grad[0];
            out[2 * stride + j] = grad[1];
            out[3 * stride + j] = grad[2];
            out[4 * stride + j] = lap;
        });
        for c in 0..5 {
            out[c * stride + n..(c + 1) * stride].iter_mut().for_each(|x| *x = A::zero());
        }
    }

    /// VGL at every point of `pos` (`[point][xyz]`) into `out` (`[point][5][stride]`).
    pub fn evaluate<A: Real>(&self, pos: &[f64], stride: usize, out: &mut [A]) {
        assert!(pos.len().is_multiple_of(3) && out.len() == pos.len() / 3 * 5 * stride, "planewave: output length");
        for (p, o) in pos.chunks_exact(3).zip(out.chunks_exact_mut(5 * stride)) {
            self.evaluate_point(p.try_into().unwrap(), stride, o);
        }
    }

    /// The k vectors as the GPU reads them, `[orbital][kx, ky, kz, 1 if sine else 0]`.
    pub fn packed(&self) -> Vec<f64> {
        self.k.iter().flat_map(|&(k, sine)| [k[0], k[1], k[2], if sine { 1.0 } else { 0.0 }]).collect()
    }
}

/// Flops of a VGL evaluation of `orbitals` orbitals at `points` points: the dot k.r (5), the sincos (counted as 20,
/// a polynomial of each after the argument's reduction), the gradient (3) and the Laplacian (6).
pub fn flops(points: usize, orbitals: usize) -> f64 {
    (points * orbitals) as f64 * 34.0
}

/// The integer vectors of the `count` smallest |n|^2 (ties broken by the vector itself), in that order, searched in a
/// box that holds every shell up to them.
fn lowest(count: usize) -> Vec<[i32; 3]> {
    let m = (count as f64).cbrt().ceil() as i32 + 1;
    let mut all: Vec<[i32; 3]> = vec![];
    for a in -m..=m {
        for b in -m..=m {
            for c in -m..=m {
                all.push([a, b, c]);
            }
        }
    }
    all.sort_by_key(|v| (norm2(v), *v));
    all
}

fn norm2(v: &[i32; 3]) -> i32 {
    v.iter().map(|x| x * x).sum()
}

/// The states per spin of the closed shells up to `max` states (1, 7, 19, 27, 33, 57, 81, 93, 123, 147, 171, ...).
pub fn closed_shells(max: usize) -> Vec<usize> {
    let all = lowest(max);
    (1..all.len().min(max + 1)).filter(|&c| norm2(&all[c - 1]) != norm2(&all[c])).collect()
}

/// Electron counts (both spins) of closed shells for an error message: those up to 342 ("2, 14, 38, ..., 342, ..."),
/// and for a larger request the two around it ("..., 342, ..., 406, 418, ...").
pub fn closed_shell_list(electrons: usize) -> String {
    let all: Vec<usize> = closed_shells((electrons / 2) * 5 / 4 + 200).iter().map(|c| 2 * c).collect();
    let mut shown: Vec<String> = all.iter().filter(|&&n| n <= 342).map(|n| n.to_string()).collect();
    if electrons > 342 {
        let below = all.iter().rev().find(|&&n| n < electrons && n > 342);
        let above = all.iter().find(|&&n| n > electrons);
        shown.push("...".into());
        shown.extend(below.into_iter().chain(above).map(|n| n.to_string()));
    }
    format!("{}, ...", shown.join(", "))
}

/// The occupied integer wavevectors n (k = 2 pi n / L) of one spin: the `count` smallest |n|^2, which must be a
/// closed shell.
pub fn occupied(count: usize) -> Result<Vec<[i32; 3]>, String> {
    if count == 0 || !closed_shells(count).contains(&count) {
        return Err(format!("{} electrons do not fill closed shells: use one of {}", 2 * count, closed_shell_list(2 * count)));
    }
    let mut all = lowest(count);
    all.truncate(count);
    Ok(all)
}

/// The real orbitals of an occupied set (k from integer vectors in a cube of side `side`).
pub fn plane_waves(occ: &[[i32; 3]], side: f64) -> PlaneWaves {
    let kv = |n: &[i32; 3]| n.map(|x| TAU / side * x as f64);
    let mut k = vec![];
    for n in occ {
        if *n == [0, 0, 0] {
            k.push((kv(n), false));
        } else if *n > [-n[0], -n[1], -n[2]] {
            // one of each +-n pair carries both the cosine and the sine
            k.push((kv(n), false));
            k.push((kv(n), true));
        }
    }
    PlaneWaves { k }
}
