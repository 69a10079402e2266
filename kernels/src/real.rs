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

    /// The mode of storage type S and arithmetic type A, the pair [`by_precision!`] makes of it: (f64, f64) double,
    /// (f32, f32) single, (f32, f64) mixed. Generic code names its precision from its types with this, so a mode
    /// cannot be passed beside types that disagree with it.
    pub fn of<S: Real, A: Real>() -> Precision {
        match (S::BYTES, A::BYTES) {
            (8, 8) => Precision::Double,
            (4, 4) => Precision::Single,
            (4, 8) => Precision::Mixed,
            _ => panic!("no precision mode stores in {} and computes in {}", S::NAME, A::NAME),
        }
    }

    /// Bytes of one value of the mode's storage type and of its arithmetic type, from its [`by_precision!`] pair:
    /// (8, 8) double, (4, 4) single, (4, 8) mixed.
    pub fn bytes(self) -> (usize, usize) {
        fn of<S: Real, A: Real>() -> (usize, usize) {
            (S::BYTES, A::BYTES)
        }
        crate::by_precision!(self => of())
    }
}

/// The one place a run's precision becomes types: `by_precision!(p => f(args))` calls `f::<S, A>(args)` (and
/// `by_precision!(p => x.f(args))` the method) with the (storage, arithmetic) pair of `p`: (f64, f64) for double,
/// (f32, f32) for single, (f32, f64) for mixed. Every generic entry point takes its types in that order, storage
/// first; inside, `Precision::of::<S, A>()` names the mode.
#[macro_export]
macro_rules! by_precision {
    ($p:expr => $recv:ident . $f:ident ( $($arg:expr),* $(,)? )) => {
        match $p {
            $crate::Precision::Double => $recv.$f::<f64, f64>($($arg),*),
            $crate::Precision::Single => $recv.$f::<f32, f32>($($arg),*),
            $crate::Precision::Mixed => $recv.$f::<f32, f64>($($arg),*),
        }
    };
    ($p:expr => $($f:ident)::+ ( $($arg:expr),* $(,)? )) => {
        match $p {
            $crate::Precision::Double => $($f)::+::<f64, f64>($($arg),*),
            $crate::Precision::Single => $($f)::+::<f32, f32>($($arg),*),
            $crate::Precision::Mixed => $($f)::+::<f32, f64>($($arg),*),
        }
    };
}

/// `x`, f64 data, as its storage-type copy `Y`: borrowed where `Y` is `X` itself (a double run uses the f64 data
/// as it is, however large: a B-spline table of gigabytes is not copied), else made by `convert`.
pub fn in_storage<'a, X: std::any::Any, Y: std::any::Any + Clone>(x: &'a X, convert: impl FnOnce(&X) -> Y) -> std::borrow::Cow<'a, Y> {
    match (x as &dyn std::any::Any).downcast_ref::<Y>() {
        Some(same) => std::borrow::Cow::Borrowed(same),
        None => std::borrow::Cow::Owned(convert(x)),
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
    fn precision_comes_from_the_type_pair_and_back() {
        fn named<S: Real, A: Real>(tag: u8) -> (Precision, u8) {
            (Precision::of::<S, A>(), tag)
        }
        for p in Precision::ALL {
            assert_eq!(crate::by_precision!(p => named(7)), (p, 7));
        }
        assert_eq!(Precision::ALL.map(Precision::bytes), [(8, 8), (4, 4), (4, 8)]);
        assert!(std::panic::catch_unwind(|| Precision::of::<f64, f32>()).is_err(), "f64 storage with f32 arithmetic is no mode");
        // f64 data is borrowed for f64 storage, converted for f32
        let x = vec![0.1f64, 0.2];
        assert!(matches!(in_storage(&x, |_| -> Vec<f64> { unreachable!() }), std::borrow::Cow::Borrowed(b) if std::ptr::eq(b, &x)));
        let y = in_storage(&x, |v| v.iter().map(|&a| a as f32).collect::<Vec<f32>>());
        assert!(matches!(y, std::borrow::Cow::Owned(_)) && y[1] == 0.2f32);
    }

    #[test]
    fn real_round_trips() {
        assert_eq!(f32::of(0.1).f64(), 0.1f32 as f64);
        assert_eq!(f64::of(0.1).f64(), 0.1);
        assert!(Precision::Mixed.eps() > Precision::Double.eps());
    }
}
