//! Writers and readers of records: a table on stdout, JSON lines and CSV files (written whole, then renamed, so an
//! interrupted run never leaves half a file and earlier records are kept), and reading record sets back.

use crate::machine::{Identity, Mismatch};
use crate::record::Record;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Problems with record files, each naming the file. An I/O error is part of the message (`cause`), not a `source`:
/// a program prints its error with its chain of sources, which printed the cause twice.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("cannot read {path}: {cause}")]
    Unreadable { path: PathBuf, cause: std::io::Error },
    #[error("{path} line {line} is not a qmc-bench record: {msg}")]
    Malformed { path: PathBuf, line: usize, msg: String },
    #[error("{0} holds no records (expected *.jsonl files written by --out)")]
    Empty(PathBuf),
    #[error("cannot write {path}: {cause}")]
    Unwritable { path: PathBuf, cause: std::io::Error },
    #[error("refusing to write to {dir}: {msg} (a records folder holds only runs of the machine it names)")]
    WrongMachine { dir: PathBuf, msg: String },
}

/// Write `bytes` to `path` atomically: a temporary file in the same folder, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RecordsError> {
    let tmp = write_temporary(path, bytes)?;
    std::fs::rename(&tmp, path).map_err(|cause| RecordsError::Unwritable { path: path.to_path_buf(), cause })
}

/// Write `bytes` to a temporary file beside `path` (synced), for a rename into place; returns its path.
fn write_temporary(path: &Path, bytes: &[u8]) -> Result<PathBuf, RecordsError> {
    let err = |cause| RecordsError::Unwritable { path: path.to_path_buf(), cause };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    // the whole name kept (k.jsonl and k.csv wait for their renames side by side)
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!("{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(err)?;
    Ok(tmp)
}

/// Parse one JSON-lines file of records.
pub fn read_file(path: &Path) -> Result<Vec<Record>, RecordsError> {
    let text = std::fs::read_to_string(path).map_err(|cause| RecordsError::Unreadable { path: path.into(), cause })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| RecordsError::Malformed { path: path.into(), line: i + 1, msg: e.to_string() })
        })
        .collect()
}

/// Records from files and folders (every `*.jsonl` below a folder). Fails on anything unreadable or malformed.
pub fn read_records(paths: &[PathBuf]) -> Result<Vec<Record>, RecordsError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|cause| RecordsError::Unreadable { path: p.clone(), cause })?;
        if meta.is_dir() {
            let mut files = Vec::new();
            collect_jsonl(p, &mut files)?;
            files.sort();
            let before = out.len();
            for f in files {
                out.extend(read_file(&f)?);
            }
            if out.len() == before {
                return Err(RecordsError::Empty(p.clone()));
            }
        } else {
            let recs = read_file(p)?;
            if recs.is_empty() {
                return Err(RecordsError::Empty(p.clone()));
            }
            out.extend(recs);
        }
    }
    Ok(out)
}

fn collect_jsonl(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), RecordsError> {
    let rd = std::fs::read_dir(dir).map_err(|cause| RecordsError::Unreadable { path: dir.into(), cause })?;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_jsonl(&p, files)?;
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            files.push(p);
        }
    }
    Ok(())
}

/// A records folder (`--out`): its machine (see [`crate::machine`]), and appends that keep it to that machine.
pub struct Folder {
    dir: PathBuf,
    identity: Identity,
}

impl Folder {
    /// The folder at `dir` (it need not exist yet), with the identity of the records it holds.
    pub fn open(dir: &Path) -> Result<Folder, RecordsError> {
        let mut existing = Vec::new();
        if dir.is_dir() {
            let rd = std::fs::read_dir(dir).map_err(|cause| RecordsError::Unreadable { path: dir.into(), cause })?;
            let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
            files.sort();
            for f in files {
                existing.extend(read_file(&f)?);
            }
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Folder { dir: dir.to_path_buf(), identity: Identity::new(&name, &existing) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Would records of system `s` belong here? (A run checks before it measures anything.)
    pub fn check(&self, s: &crate::system::System, what: &str) -> Result<(), RecordsError> {
        self.identity.clone().admit_system(s, what).map_err(|m| self.refused(m))
    }

    fn refused(&self, m: Mismatch) -> RecordsError {
        RecordsError::WrongMachine { dir: self.dir.clone(), msg: m.to_string() }
    }

    /// Append `records` to `<dir>/<kernel>.jsonl` and rewrite `<dir>/<kernel>.csv` from the whole file, per kernel.
    /// Every record must belong to the folder's machine, or nothing is written. Existing records are kept; a
    /// malformed existing file stops the write rather than being overwritten. Each file is written whole and renamed
    /// into place, all of them only once every one is ready.
    pub fn append(&mut self, records: &[Record]) -> Result<Vec<PathBuf>, RecordsError> {
        let mut identity = self.identity.clone();
        identity.admit_all(records).map_err(|m| self.refused(m))?;
        let mut by_kernel: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for r in records {
            by_kernel.entry(&r.kernel).or_default().push(r);
        }
        let mut files = Vec::new();
        for (kernel, new) in by_kernel {
            let jsonl = self.dir.join(format!("{kernel}.jsonl"));
            let mut all = if jsonl.exists() { read_file(&jsonl)? } else { Vec::new() };
            all.extend(new.into_iter().cloned());
            let mut text = String::new();
            for r in &all {
                text.push_str(&serde_json::to_string(r).expect("records serialise"));
                text.push('\n');
            }
            files.push((jsonl, text));
            files.push((self.dir.join(format!("{kernel}.csv")), to_csv(&all)));
        }
        let tmps = files.iter().map(|(path, text)| write_temporary(path, text.as_bytes())).collect::<Result<Vec<_>, _>>()?;
        for ((path, _), tmp) in files.iter().zip(tmps) {
            std::fs::rename(&tmp, path).map_err(|cause| RecordsError::Unwritable { path: path.clone(), cause })?;
        }
        self.identity = identity;
        Ok(files.into_iter().map(|(p, _)| p).collect())
    }
}

/// Append `records` to the folder `dir` (see [`Folder::append`]).
pub fn append(dir: &Path, records: &[Record]) -> Result<Vec<PathBuf>, RecordsError> {
    Folder::open(dir)?.append(records)
}

/// CSV with one row per record; sizes and params as `name=value;...` cells.
pub fn to_csv(records: &[Record]) -> String {
    let mut s = String::from(
        "kernel,op,variant,precision,sizes,params,reps,time_min_s,time_median_s,time_max_s,throughput,throughput_unit,bytes,bytes_model,flops,gbytes_per_s,gflops,ceiling_gbytes_per_s,fraction_of_ceiling,validation,compile_s,seed,cpu_model,threads_used,gpu,commit,timestamp\n",
    );
    for r in records {
        let kv = |m: Vec<String>| m.join(";");
        let opt = |x: Option<f64>| x.map(|v| format!("{v:e}")).unwrap_or_default();
        let cells = [
            r.kernel.clone(),
            r.op.clone(),
            r.variant.to_string(),
            r.precision.clone(),
            kv(r.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            kv(r.params.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            r.reps.to_string(),
            format!("{:e}", r.time.min),
            format!("{:e}", r.time.median),
            format!("{:e}", r.time.max),
            format!("{:e}", r.throughput),
            r.throughput_unit.clone(),
            format!("{:e}", r.bytes),
            r.bytes_model.map(|m| m.name().to_string()).unwrap_or_default(),
            format!("{:e}", r.flops),
            format!("{:.3}", r.gbytes_per_s),
            format!("{:.3}", r.gflops),
            opt(r.ceiling_gbytes_per_s),
            opt(r.fraction_of_ceiling),
            r.validation.status.clone(),
            opt(r.compile_s),
            r.seed.to_string(),
            r.system.cpu_model.clone(),
            r.system.threads_used.to_string(),
            r.system.gpu.as_ref().map(|g| g.name.clone()).unwrap_or_default(),
            r.commit.clone(),
            r.timestamp.clone(),
        ];
        let quoted: Vec<String> =
            cells.iter().map(|c| if c.contains([',', '"']) { format!("\"{}\"", c.replace('"', "\"\"")) } else { c.clone() }).collect();
        s.push_str(&quoted.join(","));
        s.push('\n');
    }
    s
}

/// Seconds with a unit that keeps 3-4 significant digits readable.
pub fn fmt_time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

/// A number with an SI prefix (1.23e9 -> "1.23 G").
pub fn fmt_si(x: f64) -> String {
    let (v, p) = match x.abs() {
        a if a >= 1e12 => (x / 1e12, "T"),
        a if a >= 1e9 => (x / 1e9, "G"),
        a if a >= 1e6 => (x / 1e6, "M"),
        a if a >= 1e3 => (x / 1e3, "k"),
        _ => (x, ""),
    };
    format!("{v:.3} {p}")
}

/// One line per record: the case, the median time and rates, and the validation verdict.
pub fn table_line(r: &Record) -> String {
    let sizes: Vec<String> = r.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    // "p": the bytes count every pass over the operands, cache-served re-reads included (BytesModel::Passes)
    let mark = if r.bytes_model == Some(crate::record::BytesModel::Passes) { "p" } else { " " };
    let ceil = r.fraction_of_ceiling.map(|f| format!("{:>5.1}%{mark}", 100.0 * f)).unwrap_or_else(|| "    -  ".into());
    format!(
        "{:<18} {:<7} {:<6} {:<40} {:>11} {:>28} {:>9.1} GB/s {:>9.1} GF/s {}  {}",
        format!("{}/{}", r.kernel, r.op),
        r.variant.name(),
        r.precision,
        format!("{} {}", sizes.join(" "), params.join(" ")).trim().to_string(),
        fmt_time(r.time.median),
        format!("{}{}", fmt_si(r.throughput), r.throughput_unit),
        r.gbytes_per_s,
        r.gflops,
        ceil,
        r.validation.summary(),
    )
}

/// Header of the table printed by [`table_line`].
pub fn table_header() -> String {
    format!(
        "{:<18} {:<7} {:<6} {:<40} {:>11} {:>28} {:>14} {:>14} {:>7}  {}",
        "kernel/op", "variant", "prec", "case", "median", "throughput", "bandwidth", "flop rate", "%ceil", "validation"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Validation, Variant, SCHEMA};
    use crate::timing::Stats;

    pub(crate) fn sample(kernel: &str, variant: Variant, orbitals: u64, median: f64) -> Record {
        Record {
            schema: SCHEMA,
            kernel: kernel.into(),
            op: "vgh".into(),
            variant,
            precision: "single".into(),
            sizes: [("orbitals".to_string(), orbitals), ("walkers".to_string(), 8)].into(),
            params: Default::default(),
            reps: 3,
            time: Stats { min: median * 0.9, median, max: median * 1.1, mean: Some(median) },
            throughput: 1.0 / median,
            throughput_unit: "evals/s".into(),
            bytes: 1e6,
            bytes_model: Some(crate::record::BytesModel::Compulsory),
            flops: 1e6,
            gbytes_per_s: 1e-3 / median,
            gflops: 1e-3 / median,
            ceiling_gbytes_per_s: None,
            fraction_of_ceiling: None,
            validation: Validation::from_checks(&[kernels::Check::scalar("test", 1.0, 1.0, 0.0)]),
            compile_s: None,
            compile_options: None,
            extra: Default::default(),
            seed: 1,
            system: Default::default(),
            commit: "abc".into(),
            timestamp: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn append_keeps_earlier_records_and_writes_csv() {
        let dir = std::env::temp_dir().join(format!("qmc-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        append(&dir, &[sample("bspline", Variant::Cpu, 64, 1e-3)]).unwrap();
        append(&dir, &[sample("bspline", Variant::Gpu, 64, 1e-4)]).unwrap();
        let back = read_records(&[dir.clone()]).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].variant, Variant::Gpu);
        let csv = std::fs::read_to_string(dir.join("bspline.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_file_is_an_error_naming_the_line() {
        let dir = std::env::temp_dir().join(format!("qmc-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.jsonl");
        let good = serde_json::to_string(&sample("k", Variant::Cpu, 1, 1.0)).unwrap();
        std::fs::write(&f, format!("{good}\n{{\"kernel\": 3}}\n")).unwrap();
        let err = read_records(&[f.clone()]).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        // appending to a malformed file must not overwrite it
        std::fs::rename(&f, dir.join("k.jsonl")).unwrap();
        assert!(append(&dir, &[sample("k", Variant::Cpu, 1, 1.0)]).is_err());
        assert!(std::fs::read_to_string(dir.join("k.jsonl")).unwrap().contains("\"kernel\": 3"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_of_another_machine_is_refused_and_nothing_written() {
        let dir = std::env::temp_dir().join(format!("qmc-mine-{}", std::process::id())).join("nvidia-h200");
        let _ = std::fs::remove_dir_all(&dir);
        let mut gpu = sample("gemm", Variant::Gpu, 64, 1e-4);
        gpu.system.cpu_model = "Intel(R) Xeon(R) Processor".into();
        gpu.system.cpu_physical = Some(16);
        gpu.system.gpu = Some(crate::system::GpuSystem { name: "NVIDIA H200".into(), ..Default::default() });
        append(&dir, &[gpu]).unwrap();
        // the misfiled case: a CPU-only run of the 2-core build machine into the H200 folder
        let mut build = sample("gemm", Variant::Cpu, 64, 1e-3);
        build.system.cpu_model = "AMD EPYC".into();
        build.system.cpu_physical = Some(2);
        build.system.host_gpus = Some(vec![]);
        let before = std::fs::read_to_string(dir.join("gemm.jsonl")).unwrap();
        let e = append(&dir, &[build.clone()]).unwrap_err();
        assert!(matches!(e, RecordsError::WrongMachine { .. }), "{e}");
        assert!(e.to_string().contains("AMD EPYC (2 cores), a host without NVIDIA H200"), "{e}");
        assert_eq!(std::fs::read_to_string(dir.join("gemm.jsonl")).unwrap(), before);
        // a whole batch is refused for one record of it
        let mut ok = sample("gemm", Variant::Gpu, 128, 1e-4);
        ok.system = read_file(&dir.join("gemm.jsonl")).unwrap()[0].system.clone();
        assert!(append(&dir, &[ok, build]).is_err());
        assert_eq!(read_file(&dir.join("gemm.jsonl")).unwrap().len(), 1);
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn missing_and_empty_inputs_are_errors() {
        assert!(matches!(read_records(&[PathBuf::from("/nonexistent/x.jsonl")]), Err(RecordsError::Unreadable { .. })));
        let dir = std::env::temp_dir().join(format!("qmc-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(read_records(&[dir.clone()]), Err(RecordsError::Empty(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
pub(crate) use tests::sample;
