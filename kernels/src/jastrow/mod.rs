//! Jastrow factors J = exp(sum_{i<j} f(r_i - r_j) + sum_{i,I} chi(|r_i - R_I|)): the two-body (electron-electron,
//! same and opposite spin) and one-body (electron-ion) terms of every Slater-Jastrow code.
//!
//! Two-body terms (`--term`):
//! - `bspline`: QMCPACK's cubic B-spline radial functor on M uniform intervals up to a cutoff r_c; the first
//!   coefficient is fixed by the cusp (u'(0) = (c_2 - c_0) / 2h), the last three are zero so u, u', u'' vanish at r_c.
//! - `u`: CASINO's u(r) = sum_l alpha_l r^l (r - L_u)^C Theta(L_u - r), alpha_1 fixed by the Kato cusp
//!   (paper 003 Eq. 6).
//! - `p`: CASINO's plane-wave term p(r) = sum_m a_m sum_{G in star m, one of each +-G} cos(G . r) (Eq. 7), the cosines
//!   from powers of the three exponentials exp(i b_k . r) (Eq. 8). Needs a periodic cell.
//! - `pade`: u(r) = (sum_{k>=1} a_k r^k) / (1 + sum_{k>=1} b_k r^k) with a_1 the cusp (paper 004 Eq. 10).
//!
//! The one-body term uses the radial form of the two-body term (CASINO's chi has the form of u; for `p` it is chi).
//! Cusps: +1/4 same spin, +1/2 opposite spin (J = exp(+U)), -Z for ions. Cells: open, or a periodic cube (minimum
//! image; cutoffs at most half the side, the radius of the Wigner-Seitz cell's inscribed sphere).
//!
//! Stored quantities per walker (QMCPACK's J2 layout, `[walker][component][electron]`, electron index fastest):
//! U2_i = sum_{j != i} f(r_ij), U1_i = sum_I chi(r_iI), grad_i log J (3 components), lap_i log J; log J =
//! sum_i (U2_i / 2 + U1_i). Positions are `[walker][xyz][electron]`.
//!
//! Operations: `vgl` (everything from scratch, O(N^2)); `ratio` (electron k proposed at r': log ratio
//! sum_j f(r'_k - r_j) - U2_k + chi terms - U1_k and the new gradient, O(N)); `accept` (the O(N) update of every
//! stored quantity after the move).
//!
//! Precision: `double` (f64 throughout), `single` (f32 positions, evaluation and stored sums), `mixed` (f32
//! positions and pair evaluation, f64 sums over pairs and f64 stored quantities, so incremental updates do not
//! drift).

pub mod cpu;
pub mod gpu;
pub mod reference;

pub use crate::maths::{bspline_weights, Form};
use crate::rng;
use crate::Real;
use rand::Rng;

/// Stored components per electron: U2, U1, gradient x y z, Laplacian.
pub const COMPONENTS: usize = 6;
/// Most coefficients of a radial functor (fixed-size parameter block on the GPU).
pub const MAX_COEFS: usize = 32;
/// Most plane waves (one of each +-G) of the p term.
pub const MAX_G: usize = 128;
/// Largest |n_k| of a G vector (the power tables of Eq. 8 are 0..=MAX_POWER).
pub const MAX_POWER: usize = 4;

/// Which two-body term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    BSpline,
    U,
    P,
    Pade,
}

impl Term {
    pub const ALL: [Term; 4] = [Term::BSpline, Term::U, Term::P, Term::Pade];
    pub fn name(self) -> &'static str {
        match self {
            Term::BSpline => "bspline",
            Term::U => "u",
            Term::P => "p",
            Term::Pade => "pade",
        }
    }
    /// Radial form of the term's functors (the one-body form for `p`).
    pub fn form(self) -> Form {
        match self {
            Term::BSpline => Form::BSpline,
            Term::U | Term::P => Form::Casino,
            Term::Pade => Form::Pade,
        }
    }
}

impl std::str::FromStr for Term {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Term::ALL.into_iter().find(|t| t.name() == s.to_ascii_lowercase()).ok_or_else(|| format!("unknown term '{s}': expected bspline, u, p or pade"))
    }
}

/// The simulation cell: a cube of side `side`, periodic or not (open cells still place electrons in the cube).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    pub side: f64,
    pub periodic: bool,
}

impl Cell {
    /// The cube holding `electrons` electrons at density parameter r_s (volume per electron 4/3 pi r_s^3).
    pub fn electron_gas(electrons: usize, rs: f64, periodic: bool) -> Cell {
        Cell { side: (4.0 / 3.0 * std::f64::consts::PI * electrons as f64).cbrt() * rs, periodic }
    }
    /// Largest cutoff of a short-range functor: half the side (open cells use the same, for equal work).
    pub fn max_cutoff(&self) -> f64 {
        0.5 * self.side
    }
}

/// Minimum-image displacement component (the fast kernels' form).
#[inline(always)]
pub fn wrap<T: Real>(d: T, side: T, inv_side: T, periodic: bool) -> T {
    if periodic {
        d - side * (d * inv_side).round()
    } else {
        d
    }
}

/// A radial function u(r) with its parameters in the arithmetic type T.
/// `coefs`: B-spline c_0..c_{M+2}; CASINO alpha_0..alpha_Nu; Padé a_1..a_na then b_1..b_nb.
#[derive(Clone, Debug, PartialEq)]
pub struct Radial<T> {
    pub form: Form,
    /// r_c (B-spline), L_u (CASINO); infinite for Padé.
    pub cutoff: T,
    /// 1/h of the B-spline grid.
    pub inv_h: T,
    /// C of CASINO's (r - L_u)^C; na (numerator terms) of Padé.
    pub power: usize,
    pub coefs: Vec<T>,
}

impl Radial<f64> {
    /// B-spline functor on `interior.len() + 1` intervals: c_1..c_{M-1} = interior, c_0 from the cusp, c_M.. = 0.
    pub fn bspline(cutoff: f64, cusp: f64, interior: &[f64]) -> Radial<f64> {
        let m = interior.len() + 1;
        let h = cutoff / m as f64;
        let mut coefs = vec![0.0; m + 3];
        coefs[1..m].copy_from_slice(interior);
        coefs[0] = coefs[2] - 2.0 * h * cusp;
        Radial { form: Form::BSpline, cutoff, inv_h: 1.0 / h, power: 0, coefs }
    }
    /// A B-spline functor of `intervals` intervals up to `cutoff` in the shape of the Padé c r / (1 + b r) with cusp
    /// c, with its value and slope at the cutoff subtracted so that u rises from below to zero there: the
    /// coefficient of knot k (r = k h) is that shape sampled at r = k h, for knots 0 to `intervals` - 2 (the rest
    /// zero, the one below 0 from the cusp). The two-body functors of the atoms on the batched engines
    /// (`solid::Solid::atom`: the engines' functors are B-splines, zero beyond a cutoff, so the qmc driver's Padé is
    /// approximated by one) and of the electron gas on both drivers (`planewave::heg::pair_functors`). Until
    /// 2026-11-29 the gas sampled each coefficient one knot ahead, at r = (k + 1) h, so the shape near r = 0 was that
    /// of r + h, whose slope falls short of the cusp's: the 14-electron gas at r_s = 1 had E_VMC 8.3216(52) and
    /// variance 2.17 against 8.2356(54) and 1.41 at the knots (CPU, 64 walkers, 2000 steps), and He on the batched
    /// engines -2.848 against -2.871.
    pub fn pade_shaped(cutoff: f64, cusp: f64, b: f64, intervals: usize) -> Radial<f64> {
        let h = cutoff / intervals as f64;
        let g = |r: f64| cusp * r / (1.0 + b * r);
        let dg = |r: f64| cusp / (1.0 + b * r).powi(2);
        let interior: Vec<f64> = (0..intervals - 1).map(|k| k as f64 * h).map(|r| g(r) - g(cutoff) - dg(cutoff) * (r - cutoff)).collect();
        Radial::bspline(cutoff, cusp, &interior)
    }
    /// CASINO u: alpha_0 and alpha_2.. given (`alpha[1]` is overwritten by the cusp), C = `c`.
    pub fn casino(cutoff: f64, c: usize, cusp: f64, alpha: &[f64]) -> Radial<f64> {
        let mut coefs = alpha.to_vec();
        coefs[1] = cusp / (-cutoff).powi(c as i32) + alpha[0] * c as f64 / cutoff;
        Radial { form: Form::Casino, cutoff, inv_h: 0.0, power: c, coefs }
    }
    /// Padé with numerator cusp r + a_2 r^2 + ... and denominator 1 + b_1 r + ...
    pub fn pade(cusp: f64, a_rest: &[f64], b: &[f64]) -> Radial<f64> {
        let mut coefs = vec![cusp];
        coefs.extend_from_slice(a_rest);
        coefs.extend_from_slice(b);
        Radial { form: Form::Pade, cutoff: f64::INFINITY, inv_h: 0.0, power: 1 + a_rest.len(), coefs }
    }
    /// A random but physically shaped functor of `form` (negative, rising to zero at the cutoff; random parameters
    /// as CASINO's electron-gas benchmarks use).
    pub fn random(form: Form, cutoff: f64, cusp: f64, r: &mut impl Rng) -> Radial<f64> {
        match form {
            Form::BSpline => {
                let m = 8;
                let interior: Vec<f64> = (1..m).map(|k| -0.5 * (1.0 - k as f64 / m as f64).powi(2) * r.random_range(0.8..1.2)).collect();
                Radial::bspline(cutoff, cusp, &interior)
            }
            Form::Casino => {
                // alpha_l scaled by L^-l so every term is of the same size over [0, L_u]
                let nu = 8;
                let scale = 0.3 / cutoff.powi(3);
                let alpha: Vec<f64> = (0..=nu).map(|l| r.random_range(-1.0..1.0) * scale / cutoff.powi(l as i32)).collect();
                Radial::casino(cutoff, 3, cusp, &alpha)
            }
            Form::Pade => {
                let a = [r.random_range(-0.05..0.05), r.random_range(-0.01..0.01)];
                let b = [r.random_range(0.5..1.5), r.random_range(0.1..0.3), r.random_range(0.01..0.05)];
                Radial::pade(cusp, &a, &b)
            }
        }
    }
}

impl<T: Real> Radial<T> {
    pub fn convert<U: Real>(&self) -> Radial<U> {
        Radial {
            form: self.form,
            cutoff: U::of(self.cutoff.f64()),
            inv_h: U::of(self.inv_h.f64()),
            power: self.power,
            coefs: self.coefs.iter().map(|c| U::of(c.f64())).collect(),
        }
    }

    /// u, u', u'' at r (the fast kernels' form: local B-spline weights, Horner polynomials). Beyond the cutoff the
    /// value is computed all the same and then replaced by zero, and the B-spline's interval index is clamped before
    /// it indexes: no branch and no bounds failure, so a loop over distances vectorises (`jastrow::cpu`).
    #[inline(always)]
    pub fn eval(&self, r: T) -> (T, T, T) {
        let z = T::zero();
        let cut = |v: (T, T, T)| if r >= self.cutoff { (z, z, z) } else { v };
        match self.form {
            Form::BSpline => {
                let x = r * self.inv_h;
                // r just below r_c may round to x = M: stay in the last interval
                let last = self.coefs.len() - 4;
                let i = x.floor().min(T::of(last as f64));
                let (a, da, d2a) = bspline_weights(x - i);
                let k = i.to_usize().unwrap_or(0).min(last);
                let c = &self.coefs[k..k + 4];
                let dot = |w: [T; 4]| c[0] * w[0] + c[1] * w[1] + c[2] * w[2] + c[3] * w[3];
                cut((dot(a), dot(da) * self.inv_h, dot(d2a) * self.inv_h * self.inv_h))
            }
            Form::Casino => {
                let (g, g1, g2) = horner(&self.coefs, r);
                let t = r - self.cutoff;
                let c = T::of(self.power as f64);
                let mut tc2 = T::one();
                for _ in 2..self.power {
                    tc2 *= t;
                }
                let tc1 = tc2 * t;
                let tc = tc1 * t;
                cut((tc * g, c * tc1 * g + tc * g1, c * (c - T::one()) * tc2 * g + T::of(2.0) * c * tc1 * g1 + tc * g2))
            }
            Form::Pade => {
                let (na, nb) = (self.power, self.coefs.len() - self.power);
                // A = r (a_1 + a_2 r + ...), B = 1 + r (b_1 + b_2 r + ...)
                let (p, p1, p2) = horner(&self.coefs[..na], r);
                let (q, q1, q2) = if nb > 0 { horner(&self.coefs[na..], r) } else { (z, z, z) };
                let two = T::of(2.0);
                let (a, a1, a2) = (r * p, p + r * p1, two * p1 + r * p2);
                let (b, b1, b2) = (T::one() + r * q, q + r * q1, two * q1 + r * q2);
                let ib = T::one() / b;
                let u = a * ib;
                let u1 = (a1 - u * b1) * ib;
                (u, u1, (a2 - u * b2 - two * u1 * b1) * ib)
            }
        }
    }

    /// Rough flops of one evaluation (value and two derivatives).
    pub fn flops(&self) -> f64 {
        match self.form {
            Form::BSpline => 40.0,
            Form::Casino => 6.0 * self.coefs.len() as f64 + 20.0,
            Form::Pade => 6.0 * self.coefs.len() as f64 + 25.0,
        }
    }
}

/// Polynomial sum_l c_l r^l with its first and second derivatives (Horner).
#[inline(always)]
fn horner<T: Real>(c: &[T], r: T) -> (T, T, T) {
    let (mut p, mut p1, mut p2) = (T::zero(), T::zero(), T::zero());
    for &a in c.iter().rev() {
        p2 = p2 * r + p1;
        p1 = p1 * r + p;
        p = p * r + a;
    }
    (p, p1, T::of(2.0) * p2)
}

/// CASINO's p term on a cubic cell: G = b (n_1, n_2, n_3), b = 2 pi / L.
#[derive(Clone, Debug, PartialEq)]
pub struct PTerm<T> {
    pub b: T,
    /// Integer coordinates of each G (one of each +-G pair), star by star.
    pub n: Vec<[i32; 3]>,
    /// a_m of the star each G belongs to.
    pub a: Vec<T>,
    pub stars: usize,
    /// Largest |n_k|.
    pub nmax: usize,
}

/// The first `stars` stars of the simple-cubic reciprocal lattice (orbits of the cubic group: same sorted |n_k|),
/// one of each +-G pair, by increasing |G|.
pub fn cubic_stars(stars: usize) -> Vec<Vec<[i32; 3]>> {
    let k = MAX_POWER as i32;
    let mut all: Vec<([i32; 3], [i32; 3])> = vec![];
    for x in -k..=k {
        for y in -k..=k {
            for z in -k..=k {
                let n = [x, y, z];
                // keep the half with the first non-zero component positive
                if n.iter().find(|&&c| c != 0).is_some_and(|&c| c > 0) {
                    let mut key = n.map(i32::abs);
                    key.sort_unstable_by(|a, b| b.cmp(a));
                    all.push((key, n));
                }
            }
        }
    }
    let norm = |k: &[i32; 3]| k.iter().map(|c| c * c).sum::<i32>();
    // equal |G|: the star with the largest component first (300 before 221), as CASINO's shells are counted
    all.sort_by_key(|(key, n)| (norm(key), std::cmp::Reverse(*key), *n));
    let mut out: Vec<Vec<[i32; 3]>> = vec![];
    let mut last = None;
    for (key, n) in all {
        if last != Some(key) {
            if out.len() == stars {
                break;
            }
            out.push(vec![]);
            last = Some(key);
        }
        out.last_mut().unwrap().push(n);
    }
    // stars with |n|^2 < 25 have every component within MAX_POWER, so these are whole and in order (max_stars() is
    // far below that)
    out
}

/// Most stars the GPU parameter block holds (whole stars within MAX_G vectors and MAX_POWER).
pub fn max_stars() -> usize {
    let stars = cubic_stars(64);
    let mut total = 0;
    stars.iter().take_while(|s| {
        total += s.len();
        total <= MAX_G && s.iter().flatten().all(|c| c.unsigned_abs() as usize <= MAX_POWER)
    }).count()
}

impl PTerm<f64> {
    /// `stars` stars with random coefficients a_m (scaled by 1/|G|^2 as an RPA-like term would be).
    pub fn random(cell: &Cell, stars: usize, r: &mut impl Rng) -> PTerm<f64> {
        let b = std::f64::consts::TAU / cell.side;
        let list = cubic_stars(stars);
        let mut n = vec![];
        let mut a = vec![];
        for s in &list {
            let g2 = s[0].iter().map(|c| (c * c) as f64).sum::<f64>() * b * b;
            let am = r.random_range(-1.0..1.0) * 0.5 / g2;
            for v in s {
                n.push(*v);
                a.push(am);
            }
        }
        let nmax = n.iter().flatten().map(|c| c.unsigned_abs() as usize).max().unwrap_or(0);
        PTerm { b, n, a, stars: list.len(), nmax }
    }
}

impl<T: Real> PTerm<T> {
    pub fn convert<U: Real>(&self) -> PTerm<U> {
        PTerm { b: U::of(self.b.f64()), n: self.n.clone(), a: self.a.iter().map(|x| U::of(x.f64())).collect(), stars: self.stars, nmax: self.nmax }
    }

    /// Rough flops of one pair: three sincos (counted 20 each), the power tables, 26 per G.
    pub fn flops(&self) -> f64 {
        60.0 + 18.0 * self.nmax as f64 + 26.0 * self.n.len() as f64
    }
}

/// A Jastrow factor: the two-body term, the one-body term (if there are ions), the cell and the electrons.
#[derive(Clone, Debug, PartialEq)]
pub struct Jastrow<T> {
    pub term: Term,
    pub cell: Cell,
    pub electrons: usize,
    /// Electrons 0..up are spin up, the rest spin down.
    pub up: usize,
    /// Two-body radial functors [same spin, opposite spin] (unused by `p`).
    pub pair: [Radial<T>; 2],
    /// The p term (no G vectors unless `term` is `p`).
    pub p: PTerm<T>,
    /// Ion positions `[xyz][ion]` (f64: converted once by the fast kernels).
    pub ions: Vec<f64>,
    /// The electron-ion functor (zero ions: unused).
    pub one: Radial<T>,
}

/// Sizes and options of a random Jastrow factor.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub term: Term,
    pub electrons: usize,
    pub ions: usize,
    pub periodic: bool,
    pub stars: usize,
    pub seed: u64,
}

/// Density parameter of the electron gas (cost does not depend on it).
pub const RS: f64 = 1.0;
/// Charge of the ions of the one-body term (cusp -Z).
pub const ION_CHARGE: f64 = 1.0;

impl Jastrow<f64> {
    pub fn random(s: &Setup) -> Jastrow<f64> {
        let cell = Cell::electron_gas(s.electrons, RS, s.periodic);
        let mut r = rng::rng(s.seed, 0x1A57);
        let form = s.term.form();
        let rc = cell.max_cutoff();
        let pair = [Radial::random(form, rc, 0.25, &mut r), Radial::random(form, rc, 0.5, &mut r)];
        let p = if s.term == Term::P {
            PTerm::random(&cell, s.stars, &mut r)
        } else {
            PTerm { b: std::f64::consts::TAU / cell.side, n: vec![], a: vec![], stars: 0, nmax: 0 }
        };
        let one = Radial::random(form, rc, -ION_CHARGE, &mut r);
        let ions = (0..3 * s.ions).map(|_| r.random_range(0.0..cell.side)).collect();
        Jastrow { term: s.term, cell, electrons: s.electrons, up: s.electrons.div_ceil(2), pair, p, ions, one }
    }
}

impl<T: Real> Jastrow<T> {
    pub fn convert<U: Real>(&self) -> Jastrow<U> {
        Jastrow {
            term: self.term,
            cell: self.cell,
            electrons: self.electrons,
            up: self.up,
            pair: [self.pair[0].convert(), self.pair[1].convert()],
            p: self.p.convert(),
            ions: self.ions.clone(),
            one: self.one.convert(),
        }
    }

    pub fn ion_count(&self) -> usize {
        self.ions.len() / 3
    }

    /// Flops of one electron-electron pair evaluation.
    pub fn pair_flops(&self) -> f64 {
        15.0 + match self.term {
            Term::P => self.p.flops(),
            _ => self.pair[0].flops() + 8.0,
        }
    }

    /// Flops of one electron-ion evaluation.
    pub fn ion_flops(&self) -> f64 {
        23.0 + self.one.flops()
    }
}

/// Electron moves of one `ratio`/`accept` pass: `moves` distinct electrons, each proposed at a new position per
/// walker (`pos`: `[move][walker][xyz]`, f64).
#[derive(Clone, Debug)]
pub struct Moves {
    pub electrons: Vec<usize>,
    pub pos: Vec<f64>,
}

/// Random positions of `walkers` walkers in the cell, `[walker][xyz][electron]`, f64.
pub fn random_positions(j: &Jastrow<f64>, walkers: usize, seed: u64) -> Vec<f64> {
    let mut r = rng::rng(seed, 0x905);
    (0..walkers * 3 * j.electrons).map(|_| r.random_range(0.0..j.cell.side)).collect()
}

/// `moves` proposals (electrons spread over all, each displaced by up to `step` per direction).
pub fn random_moves(j: &Jastrow<f64>, pos: &[f64], walkers: usize, moves: usize, step: f64, seed: u64) -> Moves {
    let n = j.electrons;
    let moves = moves.min(n);
    let electrons: Vec<usize> = (0..moves).map(|m| m * n / moves).collect();
    let mut r = rng::rng(seed, 0x30E);
    let mut out = Vec::with_capacity(moves * walkers * 3);
    for &k in &electrons {
        for w in 0..walkers {
            for d in 0..3 {
                out.push(pos[(w * 3 + d) * n + k] + step * r.random_range(-0.5..0.5));
            }
        }
    }
    Moves { electrons, pos: out }
}

/// Positions after every move of `m` was accepted.
pub fn moved_positions(pos: &[f64], m: &Moves, walkers: usize, n: usize) -> Vec<f64> {
    let mut out = pos.to_vec();
    for (mi, &k) in m.electrons.iter().enumerate() {
        for w in 0..walkers {
            for d in 0..3 {
                out[(w * 3 + d) * n + k] = m.pos[(mi * walkers + w) * 3 + d];
            }
        }
    }
    out
}

/// Pair evaluations of each operation per walker (the CPU uses the i<j symmetry in `vgl`; the count is the
/// fewest needed).
pub fn pair_evaluations(op: &str, n: usize, moves: usize) -> f64 {
    match op {
        "vgl" => (n * (n - 1) / 2) as f64,
        "ratio" => (moves * (n - 1)) as f64,
        _ => (2 * moves * (n - 1)) as f64,
    }
}

/// Flops of one repetition of `op` over `walkers` walkers.
pub fn flops<T: Real>(j: &Jastrow<T>, op: &str, walkers: usize, moves: usize) -> f64 {
    let n = j.electrons;
    let ions = j.ion_count() as f64;
    let one = match op {
        "vgl" => n as f64 * ions,
        "ratio" => moves as f64 * ions,
        _ => moves as f64 * ions,
    };
    walkers as f64 * (pair_evaluations(op, n, moves) * j.pair_flops() + one * j.ion_flops())
}

/// Fewest bytes of one repetition: positions read (T), stored quantities written (vgl), read (ratio) or read and
/// written (accept), in A.
pub fn bytes(op: &str, walkers: usize, n: usize, moves: usize, t_bytes: usize, a_bytes: usize) -> f64 {
    let per_walker = match op {
        "vgl" => 3 * n * t_bytes + COMPONENTS * n * a_bytes,
        "ratio" => moves * (3 * n * t_bytes + 2 * a_bytes + 4 * a_bytes),
        _ => moves * (3 * n * t_bytes + 2 * (COMPONENTS - 1) * n * a_bytes),
    };
    (walkers * per_walker) as f64
}

#[cfg(test)]
mod tests;
