//! What machine a record came from: enough to tell two hosts, two GPUs or two core counts apart.

use kernels::gpu::DeviceInfo;
use serde::{Deserialize, Serialize};

/// The host and, for GPU records, the device.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct System {
    /// Which installation ran it, without naming it: `machine-id:` and 16 hex digits of a hash of /etc/machine-id
    /// (the id itself is never recorded), or `hostname:` and a hash of the host name where there is no machine id.
    /// Records before schema 2 hold the host name (often just "vm").
    pub host: String,
    pub os: String,
    /// The CPU model as the OS reports it (/proc/cpuinfo "model name"; virtual machines often report a generic one,
    /// hence `cpu_signature`).
    pub cpu_model: String,
    /// Vendor, family, model and stepping ("GenuineIntel family 6 model 143 stepping 8"): tells CPU generations
    /// apart where the model name is generic. Empty in records before schema 2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_signature: String,
    /// Logical CPUs the machine has.
    pub cpu_logical: usize,
    /// Physical cores, where the OS says.
    pub cpu_physical: Option<usize>,
    /// Threads the CPU variants ran on (the rayon pool).
    pub threads_used: usize,
    pub memory_bytes: u64,
    /// Vector instruction set the CPU kernels ran with (avx512, avx2, baseline).
    #[serde(default)]
    pub cpu_isa: String,
    /// The CPU's best instruction set, where `QMC_SIMD` lowered `cpu_isa` below it (such a record times a smaller
    /// CPU than the machine it names, and is never imported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_isa_lowered_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSystem>,
    /// The GPUs of the host, in every record (a CPU-only record made on a GPU host names them, which ties it to that
    /// host's results folder). None in records before schema 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_gpus: Option<Vec<String>>,
    /// The compiler and the CUDA bindings the binary was built with ("rustc 1.95.0 (...)", "0.19.10"). Empty in
    /// records before schema 2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rustc: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cudarc: String,
}

/// The GPU part of [`System`].
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuSystem {
    pub name: String,
    pub ordinal: usize,
    pub compute_capability: String,
    pub multiprocessors: i32,
    pub memory_bytes: usize,
    pub l2_bytes: i32,
    /// The CUDA version the driver supports ("13.0").
    pub driver: String,
    /// The NVIDIA kernel module's release ("580.82.07"), where the OS says. Absent before schema 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_release: Option<String>,
    /// The NVRTC that compiled the kernels ("13.0"). Empty before schema 2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nvrtc: String,
}

impl From<&DeviceInfo> for GpuSystem {
    fn from(d: &DeviceInfo) -> Self {
        GpuSystem {
            name: d.name.clone(),
            ordinal: d.ordinal,
            compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            multiprocessors: d.multiprocessors,
            memory_bytes: d.memory_bytes,
            l2_bytes: d.l2_bytes,
            driver: d.driver_version.clone(),
            driver_release: kernels::gpu::Gpu::kernel_module_version(),
            nvrtc: kernels::gpu::nvrtc_version().unwrap_or_default(),
        }
    }
}

impl System {
    /// Read the host's description (the GPU part is added by the runner when a device is open).
    pub fn detect() -> System {
        use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind};
        let sys = sysinfo::System::new_with_specifics(
            RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing()).with_memory(MemoryRefreshKind::nothing().with_ram()),
        );
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        System {
            host: host_id(std::fs::read_to_string("/etc/machine-id").ok().as_deref(), sysinfo::System::host_name().as_deref()),
            os: sysinfo::System::long_os_version().unwrap_or_default(),
            cpu_model: sys.cpus().first().map(|c| c.brand().trim().to_string()).unwrap_or_default(),
            cpu_signature: cpu_signature(&cpuinfo),
            cpu_logical: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_physical: sysinfo::System::physical_core_count(),
            threads_used: rayon::current_num_threads(),
            memory_bytes: sys.total_memory(),
            cpu_isa: kernels::simd::isa().to_string(),
            cpu_isa_lowered_from: (kernels::simd::isa() != kernels::simd::detected()).then(|| kernels::simd::detected().to_string()),
            gpu: None,
            host_gpus: Some(kernels::gpu::Gpu::names()),
            rustc: env!("QMC_RUSTC_VERSION").to_string(),
            cudarc: env!("QMC_CUDARC_VERSION").to_string(),
        }
    }

    /// Physical cores of the host (logical CPUs where the OS does not say): the host's, whatever `--threads` or
    /// the process's CPU affinity allowed.
    pub fn cores(&self) -> usize {
        self.cpu_physical.unwrap_or(self.cpu_logical)
    }

    /// Which machine, for pairing records: the host id, the CPU (model, signature, physical cores), the memory and
    /// the host's GPUs. The host id alone is not enough: the GPU hosts' containers share one host name and have no
    /// machine id, so the one-H200 host (16 cores, 128 GiB) and the two-H200 host (32 cores, 256 GiB) have the same
    /// id, and a ratio of a GPU run on one over a CPU run on the other would be no measurement of either. Not the
    /// logical CPUs: they are the process's (an MPI rank bound to a core sees one), not the machine's.
    pub fn machine(&self) -> String {
        let gpus = self.host_gpus.as_ref().map_or(String::new(), |g| g.join("+"));
        let cores = self.cpu_physical.map_or("?".into(), |c| c.to_string());
        format!("{} | {} {} x{cores} | {} B | {gpus}", self.host, self.cpu_model, self.cpu_signature, self.memory_bytes)
    }

    /// A short label for tables and charts: the GPU name, or the CPU model and cores.
    pub fn label(&self, gpu: bool) -> String {
        match (&self.gpu, gpu) {
            (Some(g), true) => g.name.clone(),
            _ => format!("{} ({} threads)", self.cpu_model, self.threads_used),
        }
    }
}

/// `machine-id:<hash>` of the machine id, else `hostname:<hash>` of the host name, else "unknown". The hash is 64-bit
/// FNV-1a of the value behind a fixed prefix (an application-specific id, as systemd asks of programs that publish
/// one): it tells hosts apart and cannot be turned back into the id.
fn host_id(machine_id: Option<&str>, hostname: Option<&str>) -> String {
    let hash = |kind: &str, v: &str| {
        let h = format!("qmc-bench {kind}\n{v}").bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
        format!("{kind}:{h:016x}")
    };
    match (machine_id.map(str::trim).filter(|m| !m.is_empty()), hostname.map(str::trim).filter(|h| !h.is_empty())) {
        (Some(m), _) => hash("machine-id", m),
        (None, Some(h)) => hash("hostname", h),
        (None, None) => "unknown".into(),
    }
}

/// "vendor family F model M stepping S" from the first processor of /proc/cpuinfo (empty elsewhere).
fn cpu_signature(cpuinfo: &str) -> String {
    let field = |name: &str| {
        cpuinfo.lines().take_while(|l| !l.trim().is_empty()).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    match (field("vendor_id"), field("cpu family"), field("model"), field("stepping")) {
        (Some(v), Some(f), Some(m), Some(s)) => format!("{v} family {f} model {m} stepping {s}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_id_hashes_the_machine_id_and_never_shows_it() {
        let a = host_id(Some("3d1219c7c4c5404aaa1f6d2a48adfda4\n"), Some("vm"));
        let b = host_id(Some("0d1219c7c4c5404aaa1f6d2a48adfda4"), Some("vm"));
        assert!(a.starts_with("machine-id:") && a.len() == "machine-id:".len() + 16, "{a}");
        assert_ne!(a, b, "two machines with one host name are told apart");
        assert!(!a.contains("3d1219c7"));
        assert_eq!(a, host_id(Some("3d1219c7c4c5404aaa1f6d2a48adfda4"), None), "stable");
        assert!(host_id(None, Some("vm")).starts_with("hostname:"));
        assert_eq!(host_id(Some(" "), None), "unknown");
    }

    #[test]
    fn cpu_signature_from_cpuinfo() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\n";
        assert_eq!(cpu_signature(info), "AuthenticAMD family 25 model 17 stepping 1");
        assert_eq!(cpu_signature("processor: 0\n"), "");
    }

    /// The one- and two-H200 hosts share a host id; their cores, memory and GPUs tell them apart, while an MPI
    /// rank bound to one core (one logical CPU in its record) is still its machine.
    #[test]
    fn machines_are_told_apart_beyond_the_host_id_and_not_by_a_ranks_affinity() {
        let one = System { host: "hostname:854c".into(), cpu_physical: Some(16), cpu_logical: 16, memory_bytes: 128, host_gpus: Some(vec!["NVIDIA H200".into()]), ..System::default() };
        let two = System { cpu_physical: Some(32), cpu_logical: 32, memory_bytes: 256, host_gpus: Some(vec!["NVIDIA H200".into(); 2]), ..one.clone() };
        assert_ne!(one.machine(), two.machine());
        assert_ne!(one.machine(), System { cpu_physical: Some(32), ..one.clone() }.machine());
        assert_eq!(one.machine(), System { cpu_logical: 1, threads_used: 1, ..one.clone() }.machine());
    }

    #[test]
    fn schema_1_systems_still_read() {
        let old = r#"{"host":"vm","os":"Linux","cpu_model":"AMD EPYC","cpu_logical":2,"cpu_physical":2,"threads_used":2,"memory_bytes":1,"cpu_isa":"avx2"}"#;
        let s: System = serde_json::from_str(old).unwrap();
        assert_eq!((s.host_gpus.as_ref(), s.rustc.as_str(), s.cores()), (None, "", 2));
    }
}
