//! The result record: one per measurement, the only thing plots, comparisons and reports read.
//! Schema (DESIGN.md): what ran (kernel, operation, variant, precision, sizes, parameters), how long
//! (min/median/max of `reps` repetitions), how much work (bytes, flops, throughput in the field's unit, achieved
//! rates and the fraction of the measured bandwidth ceiling), whether it was right (validation against the f64
//! reference), on what (system), from which code (commit) and when.

use crate::system::System;
use crate::timing::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the record layout; bump when a field changes meaning. 2: `system.host` is a hash of the machine id (it
/// was the host name), and records say what their bytes count (`bytes_model`), the host's GPUs, CPU signature,
/// compiler, cudarc, NVRTC and driver release; validation statuses "unchecked" and "measure-only" replace
/// "skipped", and each check carries `compared`. Records of schema 1 still read (the new fields empty).
pub const SCHEMA: u32 = 2;

/// What a record's `bytes` count, so that its GB/s and its fraction of the copy ceiling can be read. The ceiling is
/// a copy (half reads, half writes) of buffers far larger than the caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BytesModel {
    /// Each datum one repetition needs, read or written once (distinct table rows, inputs, outputs): the least
    /// memory traffic of a repetition that finds nothing in cache. Above 100% of the copy ceiling means data stayed
    /// in cache from the previous repetition (a working set smaller than the last-level cache) or read-only traffic
    /// outran a copy (a few percent on a GPU).
    Compulsory,
    /// Every pass of the algorithm over its operands, re-reads included (a walker's inverse read and written by each
    /// update, the table rows of each move): the traffic through the memory hierarchy, much of which the caches
    /// serve, so it can be several times the copy ceiling where the operands fit in cache.
    Passes,
    /// A copy of buffers larger than every cache, read and write each counted (the ceilings themselves).
    Copy,
}

impl BytesModel {
    pub fn name(self) -> &'static str {
        match self {
            BytesModel::Compulsory => "compulsory",
            BytesModel::Passes => "passes",
            BytesModel::Copy => "copy",
        }
    }
}

/// Which implementation produced a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Variant {
    /// The plain f64 reference.
    #[serde(rename = "cpu-ref")]
    CpuRef,
    /// The fast CPU code on all threads of the pool.
    #[serde(rename = "cpu")]
    Cpu,
    /// The GPU code.
    #[serde(rename = "gpu")]
    Gpu,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::CpuRef, Variant::Cpu, Variant::Gpu];
    pub fn name(self) -> &'static str {
        match self {
            Variant::CpuRef => "cpu-ref",
            Variant::Cpu => "cpu",
            Variant::Gpu => "gpu",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu-ref" | "ref" => Ok(Variant::CpuRef),
            "cpu" => Ok(Variant::Cpu),
            "gpu" => Ok(Variant::Gpu),
            _ => Err(format!("unknown variant '{s}': expected cpu-ref, cpu or gpu")),
        }
    }
}

/// One validated quantity.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CheckRecord {
    pub quantity: String,
    /// max |fast - ref| / max |ref| (null in JSON when infinite, i.e. NaN in the output).
    pub error: Option<f64>,
    pub tolerance: f64,
    pub passed: bool,
    /// Items compared (entries, walkers, walker-steps); absent in records written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<u64>,
}

/// Validation outcome of a record. `status` is one of:
/// - "passed": at least one check, and every check passed;
/// - "failed": a check failed (a NaN anywhere, an error beyond tolerance, nothing compared);
/// - "measure-only": a measurement with nothing to check against, said in `note` (the f64 reference itself, a
///   bandwidth ceiling): a valid measurement, but not a validated one;
/// - "unchecked": no check was made although one should have been (`note` says why). Never counted as passed: a
///   run with an unchecked record exits 1 (`Runner::finish`).
///
/// Records of schema 1 wrote "skipped" for the last two; such a record reads as unchecked.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Validation {
    pub status: String,
    pub checks: Vec<CheckRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Validation {
    pub const PASSED: &'static str = "passed";
    pub const FAILED: &'static str = "failed";
    pub const MEASURE_ONLY: &'static str = "measure-only";
    pub const UNCHECKED: &'static str = "unchecked";

    /// Passed when every check passed; no check at all is unchecked, not passed.
    pub fn from_checks(checks: &[kernels::Check]) -> Validation {
        let mut v = Validation::unchecked("no check was made");
        for c in checks {
            v.add(c);
        }
        v
    }
    /// A measurement with nothing to compare: `why` says so.
    pub fn measure_only(why: &str) -> Validation {
        Validation { status: Self::MEASURE_ONLY.into(), checks: vec![], note: Some(why.into()) }
    }
    pub fn unchecked(why: &str) -> Validation {
        Validation { status: Self::UNCHECKED.into(), checks: vec![], note: Some(why.into()) }
    }
    /// Add a check: a failing one fails the record; the first passing one makes an unchecked record passed.
    pub fn add(&mut self, c: &kernels::Check) {
        let passed = c.passed();
        self.checks.push(CheckRecord {
            quantity: c.quantity.clone(),
            error: c.error.is_finite().then_some(c.error),
            tolerance: c.tolerance,
            passed,
            compared: Some(c.compared as u64),
        });
        if !passed {
            self.status = Self::FAILED.into();
        } else if self.is_unchecked() {
            self.status = Self::PASSED.into();
            self.note = None;
        }
    }
    /// Every check passed (and there was at least one). The only status that counts as validated.
    pub fn passed(&self) -> bool {
        self.status == Self::PASSED
    }
    pub fn failed(&self) -> bool {
        self.status == Self::FAILED
    }
    /// A measurement with nothing to check against, said so explicitly.
    pub fn is_measure_only(&self) -> bool {
        self.status == Self::MEASURE_ONLY
    }
    /// Not checked, though it should have been (any status other than the three above, "skipped" of schema 1
    /// included).
    pub fn is_unchecked(&self) -> bool {
        !(self.passed() || self.failed() || self.is_measure_only())
    }
    /// A number one may use: passed its checks, or a measurement that has none to pass.
    pub fn trusted(&self) -> bool {
        self.passed() || self.is_measure_only()
    }
    /// The worst error relative to its tolerance, for tables.
    pub fn summary(&self) -> String {
        let worst = self.checks.iter().max_by(|a, b| {
            let r = |c: &CheckRecord| c.error.map_or(f64::INFINITY, |e| e / c.tolerance);
            r(a).total_cmp(&r(b))
        });
        match worst {
            None => self.status.clone(),
            Some(c) => match c.error {
                Some(e) => format!("{} {} {:.1e}/{:.0e}", self.status, c.quantity, e, c.tolerance),
                None => format!("{} {} NaN", self.status, c.quantity),
            },
        }
    }
}

/// One measurement.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub schema: u32,
    pub kernel: String,
    /// What was timed within the kernel (e.g. "vgh", "ratio", "update").
    pub op: String,
    pub variant: Variant,
    pub precision: String,
    /// Size parameters (electrons, orbitals, walkers, grid, ...).
    pub sizes: BTreeMap<String, u64>,
    /// Other parameters that change the work (basis, delay rank, ...).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    pub reps: usize,
    /// Seconds per repetition.
    pub time: Stats,
    /// Work per second at the median time, in `throughput_unit`.
    pub throughput: f64,
    pub throughput_unit: String,
    /// Bytes moved (as `bytes_model` counts them) and flops done per repetition.
    pub bytes: f64,
    /// What `bytes` count (None in records before schema 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_model: Option<BytesModel>,
    pub flops: f64,
    pub gbytes_per_s: f64,
    pub gflops: f64,
    /// Copy bandwidth of the device that ran it, measured in the same process (GB/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_gbytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_of_ceiling: Option<f64>,
    pub validation: Validation,
    /// NVRTC compile and module load time of the process so far (never inside `time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_options: Option<String>,
    /// Extra measured quantities (transfer time, energies, ...), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, f64>,
    pub seed: u64,
    pub system: System,
    pub commit: String,
    pub timestamp: String,
}

impl Record {
    /// What identifies the measured case across runs and machines (everything but the results and the system).
    pub fn key(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}/{} {} {} [{}] [{}]", self.kernel, self.op, self.variant, self.precision, sizes.join(","), params.join(","))
    }

    /// The key without the variant: the CPU and GPU records of one case share it.
    pub fn case_key(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}/{} {} [{}] [{}]", self.kernel, self.op, self.precision, sizes.join(","), params.join(","))
    }
}

/// The commit this binary was built from (`-dirty` if the tree had changes).
pub fn commit() -> &'static str {
    env!("QMC_GIT_COMMIT")
}

/// Current UTC time as ISO 8601, without a date library.
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days as i64 + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_is_iso() {
        let t = timestamp();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }

    #[test]
    fn validation_status() {
        let ok = kernels::Check { quantity: "v".into(), error: 1e-9, tolerance: 1e-8, compared: 4 };
        let bad = kernels::Check { quantity: "g".into(), error: f64::INFINITY, tolerance: 1e-8, compared: 4 };
        let v = Validation::from_checks(std::slice::from_ref(&ok));
        assert!(v.passed() && v.trusted() && v.note.is_none());
        assert_eq!(v.status, "passed");
        assert_eq!(v.checks[0].compared, Some(4), "the count reaches the record");
        let v = Validation::from_checks(&[ok.clone(), bad]);
        assert!(v.failed() && !v.passed());
        assert_eq!(v.checks[1].error, None);
        assert!(v.summary().contains("NaN"));
        // a check that compared nothing fails the record
        let empty = kernels::Check { compared: 0, ..ok };
        assert!(Validation::from_checks(&[empty]).failed());
    }

    /// Without checks a record used to be "skipped" and counted by nobody as failed: it is unchecked, never passed.
    #[test]
    fn a_record_without_checks_is_unchecked_not_passed() {
        let v = Validation::from_checks(&[]);
        assert_eq!(v.status, "unchecked");
        assert!(v.is_unchecked() && !v.passed() && !v.failed() && !v.trusted());
        let old: Validation = serde_json::from_str(r#"{"status":"skipped","checks":[]}"#).unwrap();
        assert!(old.is_unchecked() && !old.passed(), "schema 1's skipped reads as unchecked");
        let m = Validation::measure_only("a bandwidth ceiling");
        assert!(m.is_measure_only() && m.trusted() && !m.passed() && !m.is_unchecked());
        assert_eq!(m.status, "measure-only");
        // a non-finite measured extra fails even a measure-only record
        let mut m = m;
        m.add(&kernels::Check::finite("extra energy", &[f64::NAN]));
        assert!(m.failed());
    }

    #[test]
    fn check_counts_round_trip_and_old_records_read() {
        let v = Validation::from_checks(&[kernels::Check::compare("v", &[1.0f64, 2.0], &[1.0, 2.0], 0.0)]);
        let back: Validation = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
        let old: CheckRecord = serde_json::from_str(r#"{"quantity":"v","error":0.0,"tolerance":0.0,"passed":true}"#).unwrap();
        assert_eq!(old.compared, None);
    }

    #[test]
    fn variant_round_trip() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse::<Variant>().unwrap(), v);
        }
        assert!("fpga".parse::<Variant>().is_err());
    }
}
