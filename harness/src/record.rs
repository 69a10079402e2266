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
/// compiler, cudarc, NVRTC and driver release. Records of schema 1 still read (the new fields empty).
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
}

/// Validation outcome of a record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Validation {
    /// "passed", "failed", or "skipped" (with the reason in `note`).
    pub status: String,
    pub checks: Vec<CheckRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Validation {
    pub fn from_checks(checks: &[kernels::Check]) -> Validation {
        let checks: Vec<CheckRecord> = checks
            .iter()
            .map(|c| CheckRecord {
                quantity: c.quantity.clone(),
                error: c.error.is_finite().then_some(c.error),
                tolerance: c.tolerance,
                passed: c.passed(),
            })
            .collect();
        let status = if checks.is_empty() {
            "skipped"
        } else if checks.iter().all(|c| c.passed) {
            "passed"
        } else {
            "failed"
        };
        Validation { status: status.into(), checks, note: None }
    }
    pub fn skipped(why: &str) -> Validation {
        Validation { status: "skipped".into(), checks: vec![], note: Some(why.into()) }
    }
    pub fn failed(&self) -> bool {
        self.status == "failed"
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
        let ok = kernels::Check { quantity: "v".into(), error: 1e-9, tolerance: 1e-8 };
        let bad = kernels::Check { quantity: "g".into(), error: f64::INFINITY, tolerance: 1e-8 };
        assert_eq!(Validation::from_checks(&[ok.clone()]).status, "passed");
        let v = Validation::from_checks(&[ok, bad]);
        assert!(v.failed());
        assert_eq!(v.checks[1].error, None);
        assert!(v.summary().contains("NaN"));
        assert_eq!(Validation::from_checks(&[]).status, "skipped");
    }

    #[test]
    fn variant_round_trip() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse::<Variant>().unwrap(), v);
        }
        assert!("fpga".parse::<Variant>().is_err());
    }
}
