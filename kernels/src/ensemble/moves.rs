//! What every driver's drift-diffusion move shares: the limited drift and the tally of proposals.

/// The drift displacement tau * v, limited as Umrigar, Nightingale and Runge (1993) with a = 1 (QMCPACK's form):
/// v_bar = v (-1 + sqrt(1 + 2 v^2 tau)) / (v^2 tau). Near a node or a nucleus |v| diverges and the plain drift would
/// throw the electron far away; the limited drift tends to sqrt(2 tau) in length, and to tau v where v^2 tau << 1.
pub fn drift(v: [f64; 3], tau: f64) -> [f64; 3] {
    let v2t = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * tau;
    let f = if v2t < 1e-8 { 1.0 - 0.5 * v2t } else { ((1.0 + 2.0 * v2t).sqrt() - 1.0) / v2t };
    v.map(|x| f * tau * x)
}

/// What a sweep did, summed so that acceptance and the effective time step can be formed over many walkers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveStats {
    pub attempted: u64,
    pub accepted: u64,
    /// sum of |r' - r|^2 over proposals, and over accepted proposals.
    pub r2_proposed: f64,
    pub r2_accepted: f64,
}

impl MoveStats {
    pub fn add(&mut self, o: &MoveStats) {
        self.attempted += o.attempted;
        self.accepted += o.accepted;
        self.r2_proposed += o.r2_proposed;
        self.r2_accepted += o.r2_accepted;
    }
    /// What was tallied between `before` and this (a later total of the same run).
    pub fn since(&self, before: &MoveStats) -> MoveStats {
        MoveStats {
            attempted: self.attempted - before.attempted,
            accepted: self.accepted - before.accepted,
            r2_proposed: self.r2_proposed - before.r2_proposed,
            r2_accepted: self.r2_accepted - before.r2_accepted,
        }
    }
    pub fn acceptance(&self) -> f64 {
        self.accepted as f64 / self.attempted.max(1) as f64
    }
}
