//! Floating-point types of the kernels and the precision modes a run can ask for.
//!
//! `Real` is the small trait every kernel is generic over (f32 and f64). `Precision` is the run-time choice of
//! paper 000: `double`, `single`, or `mixed` (single-precision storage and evaluation, double-precision
//! accumulation, inversion and estimators). Each kernel documents what `mixed` means for it.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use num_traits::{Float, FromPrimitive, NumAssign};
use std::fmt::{Debug, Display};
use std::iter::Sum;

/// A floating-point type a kernel can run in.
pub trait Real:
    Float + FromPrimitive + NumAssign + Sum + DeviceRepr + ValidAsZeroBits + Default + Debug + Display + Send + Sync + 'static
{
    /// Suffix of GPU entry points and name in records: `f32` or `f64`.
    const NAME: &'static str;
    /// Machine epsilon as f64, the unit of every validation tolerance.
    const EPS: f64;
    /// Convert from f64 (rounding to nearest).
    fn of(x: f64) -> Self;
    /// Widen to f64.
    fn f64(self) -> f64;
    /// Bytes of one value as it travels between ranks and to disk.
    const BYTES: usize;
    /// The value into `out` (`BYTES` long), little-endian.
    fn write_le(self, out: &mut [u8]);
    /// The value from `b` (`BYTES` long), little-endian.
    fn read_le(b: &[u8]) -> Self;
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    const EPS: f64 = f32::EPSILON as f64;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
    const BYTES: usize = 4;
    #[inline(always)]
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn read_le(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().expect("4 bytes"))
    }
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    const EPS: f64 = f64::EPSILON;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
    const BYTES: usize = 8;
    #[inline(always)]
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn read_le(b: &[u8]) -> Self {
        f64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
}

/// Precision mode of a run (`--precision double|single|mixed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Precision {
    /// Everything in f64.
    Double,
    /// Everything in f32.
    Single,
    /// f32 storage and evaluation, f64 accumulation (paper 000's mixed precision).
    Mixed,
}

impl Precision {
    /// All modes, in the order sweeps run them.
    pub const ALL: [Precision; 3] = [Precision::Double, Precision::Single, Precision::Mixed];

    /// Name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Double => "double",
            Precision::Single => "single",
            Precision::Mixed => "mixed",
        }
    }

    /// Epsilon of the lowest precision the mode stores data in: the unit its tolerances scale with.
    pub fn eps(self) -> f64 {
        match self {
            Precision::Double => f64::EPSILON,
            Precision::Single | Precision::Mixed => f32::EPSILON as f64,
        }
    }
}

impl Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "double" | "f64" | "dp" => Ok(Precision::Double),
            "single" | "f32" | "sp" => Ok(Precision::Single),
            "mixed" => Ok(Precision::Mixed),
            _ => Err(format!("unknown precision '{s}': expected double, single or mixed")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_parses_and_rejects() {
        assert_eq!("double".parse::<Precision>().unwrap(), Precision::Double);
        assert_eq!("F32".parse::<Precision>().unwrap(), Precision::Single);
        assert_eq!("mixed".parse::<Precision>().unwrap(), Precision::Mixed);
        let err = "quad".parse::<Precision>().unwrap_err();
        assert!(err.contains("quad") && err.contains("double"));
    }

    #[test]
    fn real_round_trips() {
        assert_eq!(f32::of(0.1).f64(), 0.1f32 as f64);
        assert_eq!(f64::of(0.1).f64(), 0.1);
        assert!(Precision::Mixed.eps() > Precision::Double.eps());
    }
}
