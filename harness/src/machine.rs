//! Which machine a record came from, and whether a records folder may take it: a folder holds only runs of the
//! machine it names, so a chart or a headline drawn from it never mixes machines.
//!
//! A machine's identity:
//! - a GPU record: the GPU's name (`NVIDIA H100 80GB HBM3`, folder slug `nvidia-h100-80gb-hbm3`);
//! - the host: its CPU model and core count ([`Host`]), which every record carries;
//! - a CPU-only record made on a GPU host: the host's GPUs (`system.host_gpus`, from schema 2 on); for older records,
//!   the host of a GPU record of that GPU in the folder or in the same batch (a host is tied to a folder by its CPU
//!   model and core count beside the GPU).
//!
//! A folder named after a GPU (`results/nvidia-...`) or holding GPU records belongs to that GPU: it takes GPU
//! records of that GPU only, from any host that has it (one-, two- and four-GPU hosts of one model share a folder;
//! each record names its host), and CPU-only records only from hosts with that GPU. Any other folder (e.g.
//! `results/local`, `results/ci-baseline`) belongs to one host.

use crate::record::Record;
use crate::system::System;
use std::collections::BTreeSet;

/// A CPU model and core count: what ties a record to a host across records of one folder.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Host {
    pub cpu_model: String,
    pub cores: usize,
}

impl Host {
    pub fn of(s: &System) -> Host {
        Host { cpu_model: s.cpu_model.clone(), cores: s.cores() }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} cores)", self.cpu_model, self.cores)
    }
}

/// The folder name a GPU's records go to: its name in lower case, runs of other characters as one '-'.
pub fn slug(gpu_name: &str) -> String {
    let mut s = String::new();
    for c in gpu_name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c);
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_matches('-').to_string()
}

/// Does a folder name claim a GPU? CUDA device names all start with "NVIDIA", so their slugs with "nvidia-".
pub fn names_gpu(folder: &str) -> bool {
    folder.starts_with("nvidia-")
}

/// Why a record does not belong in a folder.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Mismatch {
    #[error("{key} ran on {gpu}, but {folder}/ holds runs of {owner}")]
    OtherGpu { key: String, gpu: String, folder: String, owner: String },
    #[error("{key} is a CPU-only run of {host}, a host without {owner} ({why}), but {folder}/ holds runs of {owner}")]
    HostWithoutGpu { key: String, host: String, owner: String, folder: String, why: String },
    #[error("{key} ran on {host}, but {folder}/ holds runs of {owner}")]
    OtherHost { key: String, host: String, folder: String, owner: String },
}

/// What a folder's records say about its machine (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// The folder's name (its last path component).
    folder: String,
    /// The GPU slug the folder belongs to, if any (from its name or its GPU records).
    gpu: Option<String>,
    /// The GPU's name as records spell it, for messages.
    gpu_name: Option<String>,
    /// Hosts of the folder's GPU records of that GPU (ties old CPU-only records to the folder).
    gpu_hosts: BTreeSet<Host>,
    /// The one host of a folder without a GPU.
    host: Option<Host>,
}

impl Identity {
    /// The identity of folder `name` holding `records` (which are taken as they are: they were checked when written).
    pub fn new(name: &str, records: &[Record]) -> Identity {
        let mut id = Identity { folder: name.to_string(), ..Default::default() };
        if names_gpu(name) {
            id.gpu = Some(name.to_string());
        }
        for r in records {
            id.learn(&r.system);
        }
        id
    }

    /// What a record's system adds to the identity (after it was admitted).
    fn learn(&mut self, s: &System) {
        if let Some(g) = &s.gpu {
            if self.gpu.is_none() {
                self.gpu = Some(slug(&g.name));
            }
            if self.gpu.as_deref() == Some(slug(&g.name).as_str()) {
                self.gpu_name.get_or_insert_with(|| g.name.clone());
                self.gpu_hosts.insert(Host::of(s));
            }
        }
        if self.host.is_none() {
            self.host = Some(Host::of(s));
        }
    }

    fn owner(&self) -> String {
        match (&self.gpu_name, &self.gpu, &self.host) {
            (Some(name), _, _) => name.clone(),
            (None, Some(slug), _) => format!("a GPU named {slug}"),
            (None, None, Some(h)) => h.to_string(),
            (None, None, None) => "no machine yet".into(),
        }
    }

    /// Admit `r` or say why not; an admitted record joins the identity (a batch's GPU records tie its CPU records).
    pub fn admit(&mut self, r: &Record) -> Result<(), Mismatch> {
        self.admit_system(&r.system, &r.key())
    }

    /// Admit a record of system `s` (named `key` in messages).
    pub fn admit_system(&mut self, s: &System, key: &str) -> Result<(), Mismatch> {
        let (key, folder, host) = (key.to_string(), self.folder.clone(), Host::of(s));
        if let Some(g) = &s.gpu {
            if self.gpu.as_ref().is_some_and(|own| *own != slug(&g.name)) {
                return Err(Mismatch::OtherGpu { key, gpu: g.name.clone(), folder, owner: self.owner() });
            }
            if self.gpu.is_none() && self.host.as_ref().is_some_and(|h| *h != host) {
                return Err(Mismatch::OtherHost { key, host: host.to_string(), folder, owner: self.owner() });
            }
        } else if let Some(own) = self.gpu.clone() {
            let why = match &s.host_gpus {
                Some(gpus) if gpus.iter().any(|g| slug(g) == own) => None,
                Some(gpus) if gpus.is_empty() => Some("the record says the host has no GPU".to_string()),
                Some(gpus) => Some(format!("the record says the host has {}", gpus.join(", "))),
                None if self.gpu_hosts.contains(&host) => None,
                None => Some("no GPU record of that GPU in the folder or the batch ran on this CPU model and core count".into()),
            };
            if let Some(why) = why {
                return Err(Mismatch::HostWithoutGpu { key, host: host.to_string(), owner: self.owner(), folder, why });
            }
        } else if self.host.as_ref().is_some_and(|h| *h != host) {
            return Err(Mismatch::OtherHost { key, host: host.to_string(), folder, owner: self.owner() });
        }
        self.learn(s);
        Ok(())
    }

    /// Admit a batch: its GPU records first (so that old CPU-only records of the same host are tied by them), then
    /// the rest. Stops at the first record that does not belong.
    pub fn admit_all(&mut self, records: &[Record]) -> Result<(), Mismatch> {
        let (gpu, cpu): (Vec<&Record>, Vec<&Record>) = records.iter().partition(|r| r.system.gpu.is_some());
        gpu.into_iter().chain(cpu).try_for_each(|r| self.admit(r))
    }

    /// Does `r` belong here (without admitting it)? For readers that must skip records filed in the wrong folder.
    pub fn belongs(&self, r: &Record) -> bool {
        self.clone().admit(r).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;
    use crate::system::GpuSystem;
    use crate::Variant;

    fn on(cpu: &str, cores: usize, gpu: Option<&str>, host_gpus: Option<&[&str]>) -> Record {
        let mut r = sample("gemm", if gpu.is_some() { Variant::Gpu } else { Variant::Cpu }, 64, 1e-3);
        r.system.cpu_model = cpu.into();
        r.system.cpu_logical = cores;
        r.system.cpu_physical = Some(cores);
        r.system.gpu = gpu.map(|name| GpuSystem { name: name.into(), ..Default::default() });
        r.system.host_gpus = host_gpus.map(|g| g.iter().map(|s| s.to_string()).collect());
        r
    }

    const XEON: &str = "Intel(R) Xeon(R) Processor";
    const H200: &str = "NVIDIA H200";
    const H100: &str = "NVIDIA H100 80GB HBM3";

    #[test]
    fn slugs_name_the_folders() {
        assert_eq!(slug(H100), "nvidia-h100-80gb-hbm3");
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert!(names_gpu("nvidia-h200") && !names_gpu("local") && !names_gpu("ci-baseline"));
    }

    #[test]
    fn a_gpu_folder_refuses_another_gpu() {
        let mut id = Identity::new("nvidia-h200", &[on(XEON, 16, Some(H200), None)]);
        let e = id.admit(&on(XEON, 16, Some(H100), None)).unwrap_err();
        assert!(matches!(e, Mismatch::OtherGpu { .. }), "{e}");
        assert!(e.to_string().contains("ran on NVIDIA H100 80GB HBM3, but nvidia-h200/ holds runs of NVIDIA H200"), "{e}");
        // even when empty: the name claims the GPU
        assert!(Identity::new("nvidia-h200", &[]).admit(&on(XEON, 16, Some(H100), None)).is_err());
        // and a folder of H100 records, whatever its name, takes no H200
        assert!(Identity::new("mine", &[on(XEON, 16, Some(H100), None)]).admit(&on(XEON, 16, Some(H200), None)).is_err());
    }

    #[test]
    fn the_misfiled_build_machine_record_is_refused_from_the_h200_folder() {
        // what results/nvidia-h200/ held: H200 runs of 16-, 32- and 64-core hosts, and CPU runs of the 2-core machine
        let folder = [on(XEON, 16, Some(H200), None), on(XEON, 16, None, None), on(XEON, 64, Some(H200), None)];
        let mut id = Identity::new("nvidia-h200", &folder);
        // a schema-1 record (no host GPUs): no H200 record ran on a 2-core AMD EPYC
        let old = on("AMD EPYC", 2, None, None);
        let e = id.admit(&old).unwrap_err();
        assert!(matches!(e, Mismatch::HostWithoutGpu { .. }), "{e}");
        assert!(e.to_string().contains("AMD EPYC (2 cores)"), "{e}");
        // a schema-2 record says its host has no GPU
        let new = on("AMD EPYC", 2, None, Some(&[]));
        assert!(id.admit(&new).unwrap_err().to_string().contains("the record says the host has no GPU"));
        // a GPU host of another model
        assert!(id.admit(&on(XEON, 16, None, Some(&[H100]))).is_err());
    }

    #[test]
    fn cpu_runs_of_a_gpu_host_are_taken() {
        let mut id = Identity::new("nvidia-h200", &[on(XEON, 16, Some(H200), None)]);
        id.admit(&on(XEON, 16, None, None)).unwrap(); // old record, the host of an H200 record
        id.admit(&on(XEON, 32, None, Some(&[H200, H200]))).unwrap(); // says its host has H200s
        id.admit(&on(XEON, 64, Some(H200), None)).unwrap(); // another host with that GPU
        // a batch whose GPU records come after its CPU records ties them all the same
        let mut fresh = Identity::new("nvidia-h100-80gb-hbm3", &[]);
        fresh.admit_all(&[on(XEON, 16, None, None), on(XEON, 16, Some(H100), None)]).unwrap();
        assert!(fresh.belongs(&on(XEON, 16, None, None)) && !fresh.belongs(&on(XEON, 8, None, None)));
    }

    #[test]
    fn a_cpu_folder_holds_one_host() {
        let mut id = Identity::new("ci-baseline", &[on("AMD EPYC", 2, None, Some(&[]))]);
        id.admit(&on("AMD EPYC", 2, None, Some(&[]))).unwrap();
        let e = id.admit(&on(XEON, 16, None, Some(&[]))).unwrap_err();
        assert_eq!(e.to_string(), "gemm/vgh cpu single [orbitals=64,walkers=8] [] ran on Intel(R) Xeon(R) Processor (16 cores), but ci-baseline/ holds runs of AMD EPYC (2 cores)");
        assert!(id.admit(&on(XEON, 16, Some(H100), None)).is_err(), "nor GPU runs of another host");
        // the host's own GPU runs are taken (a local folder of a GPU host), and then the folder is that GPU's
        let mut local = Identity::new("local", &[on(XEON, 16, None, Some(&[H100]))]);
        local.admit(&on(XEON, 16, Some(H100), None)).unwrap();
        assert!(local.admit(&on(XEON, 64, Some(H200), None)).is_err());
    }
}
