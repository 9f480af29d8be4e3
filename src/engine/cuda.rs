//! Thin owners of CUDA driver objects (context, stream, device memory, events) for the
//! benchmark's single-stream loop. The raw driver API is used on purpose: the safe layer's
//! per-buffer event tracking would add event records around every collective we time.

use cudarc::driver::{result, sys};

use super::gpu::driver_error;

pub type CudaResult<T> = std::result::Result<T, String>;

fn check(what: &str, r: std::result::Result<(), result::DriverError>) -> CudaResult<()> {
    r.map_err(|e| format!("{what}: {}", driver_error(e)))
}

/// The device's primary context, current on this thread, and one non-blocking stream.
pub struct Gpu {
    dev: sys::CUdevice,
    pub stream: sys::CUstream,
}

impl Gpu {
    pub fn open(ordinal: u32) -> CudaResult<Gpu> {
        check("cuInit", result::init())?;
        let dev = result::device::get(ordinal as i32)
            .map_err(|e| format!("cuDeviceGet({ordinal}): {}", driver_error(e)))?;
        // SAFETY: `dev` is a valid device; the context is released in Drop.
        unsafe {
            let ctx = result::primary_ctx::retain(dev)
                .map_err(|e| format!("cuDevicePrimaryCtxRetain: {}", driver_error(e)))?;
            check("cuCtxSetCurrent", result::ctx::set_current(ctx))?;
        }
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| format!("cuStreamCreate: {}", driver_error(e)))?;
        Ok(Gpu { dev, stream })
    }

    /// Waits for all work of the context, on every stream. Fills and uploads are issued on the
    /// legacy default stream and may still be in flight when they return (a pageable upload
    /// returns once staged), while NCCL runs on our non-blocking stream, which does not wait
    /// for them: without this, a check can see its own poison (seen on 2× H200, 2026-11-30).
    pub fn settle(&self) -> CudaResult<()> {
        check("cuCtxSynchronize", result::ctx::synchronize())
    }

    pub fn synchronize(&self) -> CudaResult<()> {
        // SAFETY: the stream belongs to this context.
        check("cuStreamSynchronize", unsafe {
            result::stream::synchronize(self.stream)
        })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: created in `open`; nothing uses them after drop.
        unsafe {
            let _ = result::stream::destroy(self.stream);
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

/// A device allocation of `bytes` bytes.
pub struct DeviceBuffer {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn alloc(bytes: usize) -> CudaResult<DeviceBuffer> {
        // SAFETY: plain allocation in the current context; freed in Drop.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
            .map_err(|e| format!("cuMemAlloc({bytes} bytes): {}", driver_error(e)))?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    pub fn at(&self, offset_bytes: usize) -> sys::CUdeviceptr {
        debug_assert!(offset_bytes <= self.bytes);
        self.ptr + offset_bytes as u64
    }

    pub fn upload(&self, offset_bytes: usize, data: &[u8]) -> CudaResult<()> {
        assert!(
            offset_bytes + data.len() <= self.bytes,
            "upload out of bounds"
        );
        // SAFETY: bounds checked above; synchronous copy from host memory.
        check("cuMemcpyHtoD", unsafe {
            result::memcpy_htod_sync(self.at(offset_bytes), data)
        })
    }

    /// Fills `len` bytes from `offset_bytes` with copies of `tile`, the last one cut short.
    pub fn upload_tiled(&self, offset_bytes: usize, len: usize, tile: &[u8]) -> CudaResult<()> {
        for (at, n) in pieces(len, tile.len()) {
            self.upload(offset_bytes + at, &tile[..n])?;
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset_bytes` into `out`.
    pub fn download_into(&self, offset_bytes: usize, out: &mut [u8]) -> CudaResult<()> {
        assert!(
            offset_bytes + out.len() <= self.bytes,
            "download out of bounds"
        );
        // SAFETY: bounds checked above; synchronous copy into `out`.
        check("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(out, self.at(offset_bytes))
        })
    }

    pub fn fill(&self, offset_bytes: usize, len: usize, byte: u8) -> CudaResult<()> {
        assert!(offset_bytes + len <= self.bytes, "fill out of bounds");
        // SAFETY: bounds checked above.
        check("cuMemsetD8", unsafe {
            result::memset_d8_sync(self.at(offset_bytes), byte, len)
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `alloc`.
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// `(offset, length)` of the consecutive pieces, at most `piece` bytes each, that cover `len`
/// bytes.
pub fn pieces(len: usize, piece: usize) -> impl Iterator<Item = (usize, usize)> {
    assert!(
        piece > 0 || len == 0,
        "empty pieces cannot cover {len} bytes"
    );
    (0..len)
        .step_by(piece.max(1))
        .map(move |at| (at, piece.min(len - at)))
}

/// A timing event.
pub struct Event(sys::CUevent);

impl Event {
    pub fn new() -> CudaResult<Event> {
        result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map(Event)
            .map_err(|e| format!("cuEventCreate: {}", driver_error(e)))
    }

    /// Records the event on `gpu`'s stream.
    pub fn record(&self, gpu: &Gpu) -> CudaResult<()> {
        // SAFETY: valid event; the stream belongs to the current context.
        check("cuEventRecord", unsafe {
            result::event::record(self.0, gpu.stream)
        })
    }

    /// `Ok(true)` when the work before the event finished, `Ok(false)` while it runs.
    pub fn done(&self) -> CudaResult<bool> {
        // SAFETY: valid event.
        match unsafe { result::event::query(self.0) } {
            Ok(()) => Ok(true),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(format!("cuEventQuery: {}", driver_error(e))),
        }
    }

    /// Milliseconds from `self` to `end` (both completed).
    pub fn elapsed_ms(&self, end: &Event) -> CudaResult<f32> {
        // SAFETY: both events were recorded on the same stream and completed.
        unsafe { result::event::elapsed(self.0, end.0) }
            .map_err(|e| format!("cuEventElapsedTime: {}", driver_error(e)))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`.
        unsafe {
            let _ = result::event::destroy(self.0);
        }
    }
}
