//! Errors of the GPU layer, each worded for the person at the terminal.

use thiserror::Error;

/// Everything that can go wrong between a mini-app and the GPU.
#[derive(Debug, Error)]
pub enum GpuError {
    /// libcuda could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver found (libcuda.so could not be loaded): this machine has no usable NVIDIA GPU")]
    NoDriver,
    /// The driver loaded but reports no device with that ordinal.
    #[error("GPU {ordinal} requested but the driver reports {count} device(s)")]
    NoDevice { ordinal: usize, count: usize },
    /// The driver is older than the CUDA version the suite was built for.
    #[error("CUDA driver version {found} is too old: {needed} or newer is needed")]
    DriverTooOld { found: String, needed: String },
    /// libnvrtc could not be loaded, so kernels cannot be compiled.
    #[error("NVRTC (libnvrtc.so) could not be loaded: install the CUDA runtime compiler or put its folder on LD_LIBRARY_PATH")]
    NoNvrtc,
    /// NVRTC rejected a kernel source; the log says why.
    #[error("NVRTC failed to compile module '{module}':\n{log}")]
    Compile { module: String, log: String },
    /// Allocation larger than the free device memory.
    #[error("{what} needs {asked} bytes ({:.2} GiB) of GPU memory but only {free} bytes ({:.2} GiB) are free", *.asked as f64 / 1073741824.0, *.free as f64 / 1073741824.0)]
    OutOfMemory { what: String, asked: usize, free: usize },
    /// A kernel asked for more shared memory per block than the device has.
    #[error("a block of {kernel} needs {asked} bytes of shared memory; the device allows {limit}")]
    SharedMemory { kernel: String, asked: usize, limit: usize },
    /// cuBLAS could not be loaded or failed.
    #[error("cuBLAS error while {during}: {message}")]
    Blas { during: String, message: String },
    /// A stream capture that made no graph.
    #[error("capturing {0} into a CUDA graph made no graph")]
    EmptyGraph(String),
    /// Any other driver error, with what was being done.
    #[error("CUDA driver error while {during}: {source}")]
    Driver {
        during: String,
        #[source]
        source: cudarc::driver::DriverError,
    },
}

/// Attach "while ..." context to a driver result.
pub trait DriverContext<T> {
    fn during(self, what: &str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, cudarc::driver::DriverError> {
    fn during(self, what: &str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver { during: what.to_string(), source })
    }
}
