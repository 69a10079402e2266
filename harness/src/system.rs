//! What machine a record came from: enough to tell two hosts, two GPUs or two core counts apart.

use kernels::gpu::DeviceInfo;
use serde::{Deserialize, Serialize};

/// The host and, for GPU records, the device.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct System {
    pub host: String,
    pub os: String,
    pub cpu_model: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSystem>,
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
    pub driver: String,
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
        System {
            host: sysinfo::System::host_name().unwrap_or_default(),
            os: sysinfo::System::long_os_version().unwrap_or_default(),
            cpu_model: sys.cpus().first().map(|c| c.brand().trim().to_string()).unwrap_or_default(),
            cpu_logical: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_physical: sysinfo::System::physical_core_count(),
            threads_used: rayon::current_num_threads(),
            memory_bytes: sys.total_memory(),
            cpu_isa: kernels::simd::isa().to_string(),
            gpu: None,
        }
    }

    /// A short label for tables and charts: the GPU name, or the CPU model and cores.
    pub fn label(&self, gpu: bool) -> String {
        match (&self.gpu, gpu) {
            (Some(g), true) => g.name.clone(),
            _ => format!("{} ({} threads)", self.cpu_model, self.threads_used),
        }
    }
}
