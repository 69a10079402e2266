//! The tally of values checked finite that both engines keep as they compute them (every walker's local energy and
//! branching weight at every step: a NaN weight would send every comb copy to walker 0 and nothing else would
//! notice). Its own module, below the engines and the checks of [`super::validate`] that read it.

use crate::check::Check;

/// Values (local energies, weights) checked finite, how many were not, and where the first of those was.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Finite {
    pub checked: u64,
    pub bad: u64,
    /// (step, walker) of the first value that was not finite.
    pub first: Option<(usize, usize)>,
}

impl Finite {
    /// Count `values` (one per walker) of step `step`.
    pub fn tally(&mut self, step: usize, values: &[f64]) {
        self.checked += values.len() as u64;
        for (k, _) in values.iter().enumerate().filter(|(_, v)| !v.is_finite()) {
            self.bad += 1;
            self.first.get_or_insert((step, k));
        }
    }

    /// The check of the record: error 0 when every value was finite, infinite otherwise.
    pub fn check(&self) -> Check {
        let mut quantity = "every walker's local energy and weight finite at every step".to_string();
        match self.first {
            Some((step, k)) => quantity += &format!(" ({} were not; the first at step {step}, walker {k})", self.bad),
            None if self.bad > 0 => quantity += &format!(" ({} were not)", self.bad),
            None => {}
        }
        let error = if self.bad == 0 { 0.0 } else { f64::INFINITY };
        Check { quantity, error, tolerance: 0.0, compared: self.checked as usize }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_every_value_and_names_the_first_bad_one() {
        let mut f = Finite::default();
        f.tally(0, &[1.0, 2.0]);
        assert!(f.check().passed() && f.check().compared == 2);
        f.tally(3, &[1.0, f64::NAN, f64::INFINITY]);
        let c = f.check();
        assert!(!c.passed() && c.compared == 5);
        assert!(c.quantity.contains("2 were not; the first at step 3, walker 1"), "{}", c.quantity);
        assert!(!Finite::default().check().passed(), "nothing tallied: nothing checked");
    }
}
