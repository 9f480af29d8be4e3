//! Posting sends and receives and waiting for their completions, with the bookkeeping libfabric
//! leaves to the application: one live `fi_context2` per operation in flight, retry on
//! `-FI_EAGAIN`, registered buffers, and a deadline so a dead peer is an error, not a hang.

use std::alloc::Layout;
use std::ffi::c_void;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::endpoint::{Completion, RdmEndpoint};
use super::ffi;
use crate::error::{Error, Result};

/// A page-aligned, zeroed heap buffer (registration works on whole pages on RDMA devices).
pub struct Buffer {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
    pub desc: *mut c_void,
}

impl Buffer {
    /// Allocates and, when the provider needs it, registers `len` bytes.
    fn new(ep: &RdmEndpoint, len: usize) -> Result<Buffer> {
        let layout = Layout::from_size_align(len.max(1), 4096)
            .map_err(|_| Error::usage(format!("message size {len} is too large")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::infra(format!(
                "cannot allocate {len} bytes for a message buffer"
            )));
        }
        let mut buf = Buffer {
            ptr,
            len,
            layout,
            desc: std::ptr::null_mut(),
        };
        // SAFETY: callers wait for every operation on a buffer before dropping it; a
        // registration outliving its buffer is only closed (never used) when the endpoint drops.
        buf.desc = unsafe { ep.register(buf.ptr, buf.len)? };
        Ok(buf)
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes; no operation writes it while we read (callers
        // only look after the matching completion).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// One `fi_context2` per operation in flight (libfabric's FI_CONTEXT mode lends it to the
/// provider until the completion is read). Slots are boxed so their addresses never move.
struct ContextPool {
    slots: Box<[ffi::fi_context2]>,
    free: Vec<usize>,
}

impl ContextPool {
    fn new(n: usize) -> Self {
        // SAFETY: fi_context2 is plain pointers; zero is its initial state.
        let slots = (0..n)
            .map(|_| unsafe { std::mem::zeroed() })
            .collect::<Vec<_>>();
        ContextPool {
            slots: slots.into_boxed_slice(),
            free: (0..n).rev().collect(),
        }
    }

    fn take(&mut self) -> Option<*mut c_void> {
        let i = self.free.pop()?;
        Some(&mut self.slots[i] as *mut ffi::fi_context2 as *mut c_void)
    }

    fn give_back(&mut self, ctx: *mut c_void) {
        let base = self.slots.as_ptr() as usize;
        let offset = (ctx as usize).wrapping_sub(base);
        let i = offset / std::mem::size_of::<ffi::fi_context2>();
        if i < self.slots.len() && !self.free.contains(&i) {
            self.free.push(i);
        }
    }
}

/// Sends and receives to one peer, counting completions.
pub struct Transfers<'e> {
    ep: &'e RdmEndpoint,
    peer: ffi::fi_addr_t,
    contexts: ContextPool,
    completions: Vec<Completion>,
    sends_in_flight: usize,
    recvs_completed: usize,
    recv_bytes: usize,
    /// Give up after this long without any completion.
    timeout: Duration,
    last_progress: Instant,
    /// The out-of-band connection: when the peer process dies it closes, and waiting stops.
    oob: Option<&'e TcpStream>,
    last_oob_check: Instant,
}

impl<'e> Transfers<'e> {
    pub fn new(
        ep: &'e RdmEndpoint,
        peer: ffi::fi_addr_t,
        max_in_flight: usize,
        timeout: Duration,
        oob: Option<&'e TcpStream>,
    ) -> Self {
        Transfers {
            ep,
            peer,
            contexts: ContextPool::new(max_in_flight),
            completions: Vec::with_capacity(32),
            sends_in_flight: 0,
            recvs_completed: 0,
            recv_bytes: 0,
            timeout,
            last_progress: Instant::now(),
            oob,
            last_oob_check: Instant::now(),
        }
    }

    /// A page-aligned buffer, registered with the endpoint when the provider needs that.
    pub fn buffer(&self, len: usize) -> Result<Buffer> {
        Buffer::new(self.ep, len)
    }

    /// Sends `len` bytes of `buf` to the peer.
    pub fn send(&mut self, buf: &Buffer, len: usize, what: &str) -> Result<()> {
        let ctx = self.context(what)?;
        let mut spins = 0;
        loop {
            // SAFETY: buffers outlive the transfers (they are dropped after waiting for every
            // completion), and ctx stays reserved until its completion is read.
            if unsafe {
                self.ep
                    .post_send(buf.ptr(), len, buf.desc, self.peer, ctx)?
            } {
                self.sends_in_flight += 1;
                return Ok(());
            }
            self.spin(&mut spins, what)?;
        }
    }

    /// Posts a receive of up to `len` bytes into `buf`.
    pub fn recv(&mut self, buf: &Buffer, len: usize, what: &str) -> Result<()> {
        let ctx = self.context(what)?;
        let mut spins = 0;
        loop {
            // SAFETY: as in `send`.
            if unsafe { self.ep.post_recv(buf.ptr(), len, buf.desc, ctx)? } {
                return Ok(());
            }
            self.spin(&mut spins, what)?;
        }
    }

    /// Waits until `n` more receives have completed; returns the bytes they carried.
    pub fn wait_recvs(&mut self, n: usize, what: &str) -> Result<usize> {
        while self.recvs_completed < n {
            self.progress(what)?;
        }
        self.recvs_completed -= n;
        Ok(std::mem::take(&mut self.recv_bytes))
    }

    /// Waits until every send has completed (its buffer may be reused).
    pub fn wait_sends(&mut self, what: &str) -> Result<()> {
        while self.sends_in_flight > 0 {
            self.progress(what)?;
        }
        Ok(())
    }

    fn context(&mut self, what: &str) -> Result<*mut c_void> {
        loop {
            if let Some(ctx) = self.contexts.take() {
                return Ok(ctx);
            }
            self.progress(what)?;
        }
    }

    /// Reads the completion queue once (which also drives progress); true when something
    /// completed.
    pub fn poll_once(&mut self) -> Result<bool> {
        self.completions.clear();
        if self.ep.poll(&mut self.completions)? == 0 {
            return Ok(false);
        }
        for c in self.completions.drain(..) {
            self.contexts.give_back(c.context);
            if c.is_recv {
                self.recvs_completed += 1;
                self.recv_bytes += c.len;
            } else {
                self.sends_in_flight = self.sends_in_flight.saturating_sub(1);
            }
        }
        self.last_progress = Instant::now();
        Ok(true)
    }

    /// Polls the completion queue until something completes.
    fn progress(&mut self, what: &str) -> Result<()> {
        let mut spins = 0;
        while !self.poll_once()? {
            self.check_spin(&mut spins, what)?;
        }
        Ok(())
    }

    /// One poll while waiting to retry a post the provider refused with `-FI_EAGAIN` (the poll
    /// is what lets the provider make room).
    fn spin(&mut self, spins: &mut u32, what: &str) -> Result<()> {
        self.poll_once()?;
        self.check_spin(spins, what)
    }

    /// Busy waiting. Only a wait that already took long yields the CPU (so two ranks sharing a
    /// small machine cannot starve each other forever): yielding on every wait costs
    /// milliseconds per round trip on a loaded host, which would be measured as latency.
    fn check_spin(&mut self, spins: &mut u32, what: &str) -> Result<()> {
        *spins += 1;
        if spins.is_multiple_of(1024) {
            if self.last_progress.elapsed() > Duration::from_millis(20) {
                std::thread::yield_now();
            }
            self.check_alive(what)?;
        }
        Ok(())
    }

    fn check_alive(&mut self, what: &str) -> Result<()> {
        if self.last_progress.elapsed() > self.timeout {
            return Err(Error::Timeout {
                what: format!("no fabric completion for {:?} while {what}", self.timeout),
                hint: Some("the peer is stuck or traffic is blocked between the two endpoints (security group, firewall); raise --timeout if the link is just slow".into()),
            });
        }
        if let Some(oob) = self.oob
            && self.last_oob_check.elapsed() > Duration::from_millis(100)
        {
            self.last_oob_check = Instant::now();
            if peer_closed(oob) {
                return Err(Error::infra(format!(
                    "the peer closed the connection while {what}"
                )));
            }
        }
        Ok(())
    }
}

/// A non-blocking peek: the peer's socket is closed (EOF or reset).
pub fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let closed = match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_slots_are_reused_only_after_they_come_back() {
        let mut pool = ContextPool::new(2);
        let a = pool.take().unwrap();
        let b = pool.take().unwrap();
        assert_ne!(a, b);
        assert!(pool.take().is_none(), "two slots, two operations in flight");
        pool.give_back(b);
        pool.give_back(b); // a duplicate completion must not double-free a slot
        assert_eq!(pool.take(), Some(b));
        assert!(pool.take().is_none());
        pool.give_back(std::ptr::null_mut()); // a foreign pointer is ignored
        assert!(pool.take().is_none());
    }
}
