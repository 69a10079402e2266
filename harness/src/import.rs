//! Bringing the records of a GPU host home: `qmcbench import ARCHIVE-or-DIR [--into results/<gpu>]`. Every record is
//! checked before anything is written: it names a clean commit (a 40-digit hash, not `-dirty`: a number must be
//! reproducible from the code), it is not in the folder already, and it belongs to the folder's machine (the GPU
//! the folder is named for; see [`crate::machine`]). Then all are appended at once ([`Folder::append`]).

use crate::machine::slug;
use crate::output::{read_records, Folder, RecordsError};
use crate::record::Record;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Why an import was refused.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Records(#[from] RecordsError),
    #[error("cannot unpack {path}: {msg}")]
    Unpack { path: PathBuf, msg: String },
    #[error("{key} (timestamp {timestamp}) names commit '{commit}': only records of a committed, clean tree are imported")]
    Commit { key: String, timestamp: String, commit: String },
    #[error("the records hold GPU runs of {gpus}: one import is one GPU's runs")]
    SeveralGpus { gpus: String },
    #[error("the records hold no GPU run: name the folder with --into")]
    NoGpu,
    #[error("the records are runs of {gpu}, whose folder is {want}/, not {got}")]
    Folder { gpu: String, want: String, got: String },
    #[error("{key} (timestamp {timestamp}) ran with a planted slowdown (QMC_PLANT_SLOWDOWN): its time is not the code's, it is not imported")]
    Planted { key: String, timestamp: String },
    #[error("{key} (timestamp {timestamp}) ran with QMC_SIMD={isa} on a CPU that has {best}: it times a smaller CPU than the machine it names, it is not imported")]
    Lowered { key: String, timestamp: String, isa: String, best: String },
    #[error("{n} of the records are in {dir} already ({first}, ...): imported before?")]
    Duplicates { n: usize, dir: PathBuf, first: String },
}

/// Is `commit` a clean commit hash (what `git rev-parse HEAD` prints)?
pub fn clean_commit(commit: &str) -> bool {
    commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The records of `source`: a folder of `*.jsonl`, a `.jsonl` file, or a `.tgz`/`.tar.gz` archive of them (unpacked
/// with `tar` into a temporary folder).
pub fn read_source(source: &Path) -> Result<Vec<Record>, ImportError> {
    let name = source.to_string_lossy();
    if !(name.ends_with(".tgz") || name.ends_with(".tar.gz")) {
        return Ok(read_records(&[source.to_path_buf()])?);
    }
    let unpack = |msg: String| ImportError::Unpack { path: source.to_path_buf(), msg };
    let tmp = std::env::temp_dir().join(format!("qmc-import-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| unpack(e.to_string()))?;
    let out = std::process::Command::new("tar").arg("-xzf").arg(source).arg("-C").arg(&tmp).output();
    let records = match out {
        Ok(o) if o.status.success() => read_records(std::slice::from_ref(&tmp)).map_err(ImportError::from),
        Ok(o) => Err(unpack(String::from_utf8_lossy(&o.stderr).trim().to_string())),
        Err(e) => Err(unpack(format!("running tar: {e}"))),
    };
    let _ = std::fs::remove_dir_all(&tmp);
    records
}

/// The folder the records go to: `into`, or `<results>/<slug of their GPU>`. With GPU runs among them, the folder
/// must be named for that GPU.
pub fn destination(records: &[Record], into: Option<&Path>, results: &Path) -> Result<PathBuf, ImportError> {
    let gpus: BTreeSet<&str> = records.iter().filter_map(|r| r.system.gpu.as_ref()).map(|g| g.name.as_str()).collect();
    if gpus.len() > 1 {
        return Err(ImportError::SeveralGpus { gpus: gpus.into_iter().collect::<Vec<_>>().join(", ") });
    }
    match (gpus.first(), into) {
        (None, None) => Err(ImportError::NoGpu),
        (None, Some(dir)) => Ok(dir.to_path_buf()),
        (Some(gpu), None) => Ok(results.join(slug(gpu))),
        (Some(gpu), Some(dir)) => {
            let got = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if got != slug(gpu) {
                return Err(ImportError::Folder { gpu: gpu.to_string(), want: slug(gpu), got: dir.display().to_string() });
            }
            Ok(dir.to_path_buf())
        }
    }
}

/// Check every record and append them all to `dir`, or write nothing. Returns how many were appended.
pub fn import(records: &[Record], dir: &Path) -> Result<usize, ImportError> {
    if let Some(r) = records.iter().find(|r| !clean_commit(&r.commit)) {
        return Err(ImportError::Commit { key: r.key(), timestamp: r.timestamp.clone(), commit: r.commit.clone() });
    }
    if let Some(r) = records.iter().find(|r| r.extra.contains_key(crate::compare::PLANTED_EXTRA)) {
        return Err(ImportError::Planted { key: r.key(), timestamp: r.timestamp.clone() });
    }
    if let Some((r, best)) = records.iter().find_map(|r| r.system.cpu_isa_lowered_from.as_ref().map(|b| (r, b))) {
        let (key, timestamp, isa, best) = (r.key(), r.timestamp.clone(), r.system.cpu_isa.clone(), best.clone());
        return Err(ImportError::Lowered { key, timestamp, isa, best });
    }
    let existing = if dir.is_dir() { read_records(&[dir.to_path_buf()]).or_else(|e| match e {
        RecordsError::Empty(_) => Ok(vec![]),
        e => Err(e),
    })? } else { vec![] };
    let dup: Vec<&Record> = records.iter().filter(|r| existing.contains(r)).collect();
    if let Some(first) = dup.first() {
        return Err(ImportError::Duplicates { n: dup.len(), dir: dir.to_path_buf(), first: first.key() });
    }
    Folder::open(dir)?.append(records)?;
    Ok(records.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;
    use crate::system::GpuSystem;
    use crate::Variant;

    fn h100(variant: Variant, orbitals: u64) -> Record {
        let mut r = sample("bspline", variant, orbitals, 1e-3);
        r.commit = "0123456789abcdef0123456789abcdef01234567".into();
        r.system.cpu_model = "Intel(R) Xeon(R) Processor".into();
        r.system.cpu_physical = Some(16);
        if variant == Variant::Gpu {
            r.system.gpu = Some(GpuSystem { name: "NVIDIA H100 80GB HBM3".into(), ..Default::default() });
        }
        r
    }

    #[test]
    fn an_archive_goes_to_its_gpus_folder_once() {
        let root = std::env::temp_dir().join(format!("qmc-import-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let host = root.join("host");
        crate::output::append(&host, &[h100(Variant::Cpu, 64), h100(Variant::Gpu, 64)]).unwrap();
        let tgz = root.join("records.tgz");
        let ok = std::process::Command::new("tar").arg("-czf").arg(&tgz).arg("-C").arg(&host).arg("bspline.jsonl").status().unwrap();
        assert!(ok.success());
        let recs = read_source(&tgz).unwrap();
        assert_eq!(recs.len(), 2);
        let results = root.join("results");
        let dir = destination(&recs, None, &results).unwrap();
        assert_eq!(dir, results.join("nvidia-h100-80gb-hbm3"));
        assert_eq!(import(&recs, &dir).unwrap(), 2);
        assert_eq!(read_records(std::slice::from_ref(&dir)).unwrap(), recs);
        // a second import of the same archive is refused, and nothing is added
        assert!(matches!(import(&recs, &dir), Err(ImportError::Duplicates { n: 2, .. })));
        assert_eq!(read_records(std::slice::from_ref(&dir)).unwrap().len(), 2);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn dirty_commits_other_folders_and_other_machines_are_refused() {
        let root = std::env::temp_dir().join(format!("qmc-import-refuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut dirty = h100(Variant::Gpu, 64);
        dirty.commit.push_str("-dirty");
        let dir = root.join("nvidia-h100-80gb-hbm3");
        assert!(import(&[h100(Variant::Gpu, 128), dirty], &dir).unwrap_err().to_string().contains("-dirty'"));
        assert!(!dir.exists(), "nothing written");
        // a run with a planted slowdown (the GPU host's regression stage) is never imported
        let mut planted = h100(Variant::Gpu, 64);
        planted.extra.insert(crate::compare::PLANTED_EXTRA.into(), 1.05);
        assert!(matches!(import(&[h100(Variant::Gpu, 128), planted], &dir), Err(ImportError::Planted { .. })));
        assert!(!dir.exists(), "nothing written");
        // nor a run whose CPU side QMC_SIMD lowered to a smaller instruction set
        let mut lowered = h100(Variant::Cpu, 64);
        (lowered.system.cpu_isa, lowered.system.cpu_isa_lowered_from) = ("avx2".into(), Some("avx512".into()));
        let e = import(&[h100(Variant::Gpu, 128), lowered], &dir).unwrap_err().to_string();
        assert!(e.contains("ran with QMC_SIMD=avx2 on a CPU that has avx512"), "{e}");
        assert!(!dir.exists(), "nothing written");
        let e = destination(&[h100(Variant::Gpu, 64)], Some(&root.join("nvidia-h200")), &root).unwrap_err();
        assert_eq!(e.to_string(), format!("the records are runs of NVIDIA H100 80GB HBM3, whose folder is nvidia-h100-80gb-hbm3/, not {}", root.join("nvidia-h200").display()));
        assert!(matches!(destination(&[h100(Variant::Cpu, 64)], None, &root), Err(ImportError::NoGpu)));
        // the build machine's CPU runs into the H100 folder: refused by the folder's machine
        import(&[h100(Variant::Gpu, 64)], &dir).unwrap();
        let mut build = h100(Variant::Cpu, 64);
        build.system.cpu_model = "AMD EPYC".into();
        build.system.cpu_physical = Some(2);
        let e = import(&[build], &dir).unwrap_err().to_string();
        assert!(e.contains("refusing to write to") && e.contains("AMD EPYC (2 cores)"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
