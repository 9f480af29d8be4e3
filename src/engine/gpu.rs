//! Which GPUs this host has, through the CUDA driver API loaded at run time.
//! Every entry is gated by cudarc's presence check: without a driver this is an error with
//! exit code 3, never a panic.

use cudarc::driver::{result, sys};

use crate::error::{Error, Result};
use crate::results::GpuInfo;

#[derive(Debug, Clone)]
pub struct GpuInventory {
    /// `13.0` from `cuDriverGetVersion`.
    pub cuda_driver: String,
    pub gpus: Vec<GpuInfo>,
}

/// Is `libcuda.so` loadable at all? Safe to call anywhere.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the candidate names.
    unsafe { sys::is_culib_present() }
}

pub fn detect_gpus() -> Result<GpuInventory> {
    if !driver_present() {
        return Err(Error::missing(
            "no NVIDIA driver: libcuda.so.1 was not found",
            "run on a host with NVIDIA GPUs and the driver installed (in a container: the NVIDIA container toolkit and a GPU request)",
        ));
    }
    result::init().map_err(|e| {
        Error::missing(
            format!(
                "the CUDA driver found no usable GPU (cuInit: {})",
                driver_error(e)
            ),
            "check `nvidia-smi`; in a container, request GPUs (`--gpus all` or `nvidia.com/gpu`)",
        )
    })?;
    let mut version = 0;
    // SAFETY: plain out-parameter call after a successful cuInit.
    unsafe { sys::cuDriverGetVersion(&mut version) };
    let count = result::device::get_count()
        .map_err(|e| Error::infra(format!("cuDeviceGetCount: {}", driver_error(e))))?;
    if count == 0 {
        return Err(Error::missing(
            "the CUDA driver reports 0 GPUs",
            "check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
        ));
    }
    let mut gpus = vec![];
    for index in 0..count {
        let dev = result::device::get(index)
            .map_err(|e| Error::infra(format!("cuDeviceGet({index}): {}", driver_error(e))))?;
        let name = result::device::get_name(dev).unwrap_or_else(|_| "unknown GPU".into());
        // SAFETY: `dev` comes from cuDeviceGet.
        let memory = unsafe { result::device::total_mem(dev) }
            .ok()
            .map(|m| m as u64);
        gpus.push(GpuInfo {
            index: index as u32,
            name,
            pci_bus_id: pci_bus_id(dev),
            memory_bytes: memory,
        });
    }
    Ok(GpuInventory {
        cuda_driver: format!("{}.{}", version / 1000, (version % 1000) / 10),
        gpus,
    })
}

fn pci_bus_id(dev: sys::CUdevice) -> Option<String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer length is passed; the driver writes a NUL-terminated string.
    let rc = unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev) };
    (rc == sys::CUresult::CUDA_SUCCESS).then(|| {
        // SAFETY: NUL-terminated by the driver within the buffer.
        unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    })
}

/// `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
pub fn driver_error(e: result::DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}
