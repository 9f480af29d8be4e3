//! One reliable-datagram (RDM) endpoint with its fabric, domain, completion queue and address
//! vector, opened from the first `fi_getinfo` match. libfabric's `static inline` calls become
//! calls through the providers' ops tables, exactly what the C inlines do.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ffi;
use super::info::{Hints, InfoList, ProviderEntry};
use super::library::Libfabric;
use crate::error::{Error, Result};

/// `FI_ADDR_UNSPEC` (a macro, so bindgen does not emit it).
pub const FI_ADDR_UNSPEC: ffi::fi_addr_t = u64::MAX;

/// Which provider and domain to open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub provider: Option<String>,
    pub domain: Option<String>,
}

/// What was opened, for reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndpointInfo {
    pub provider: String,
    pub provider_version: String,
    pub fabric: String,
    pub domain: String,
    pub addr_format: String,
    /// As in the provider listing: `null` in JSON for "unlimited" (SIZE_MAX).
    #[serde(with = "super::info::msg_size")]
    pub max_msg_size: u64,
    /// The provider needs registered buffers (`FI_MR_LOCAL`).
    pub mr_local: bool,
}

/// A completion: which operation (its context) and whether it was a send or a receive.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub context: *mut c_void,
    pub is_recv: bool,
    pub len: usize,
}

pub struct RdmEndpoint {
    lib: Arc<Libfabric>,
    info: *mut ffi::fi_info,
    fabric: *mut ffi::fid_fabric,
    domain: *mut ffi::fid_domain,
    cq: *mut ffi::fid_cq,
    av: *mut ffi::fid_av,
    ep: *mut ffi::fid_ep,
    /// Registrations, closed with the endpoint (a RefCell: buffers are registered while
    /// operations are in flight, through a shared reference).
    mrs: RefCell<Vec<*mut ffi::fid_mr>>,
    pub info_summary: EndpointInfo,
    /// The raw address format, to check that both sides speak the same one.
    pub addr_format: u32,
}

/// Attribute structs the application allocates are padded: a newer library may read fields
/// appended after the 1.17 layout, and zeros there mean "default".
#[repr(C)]
struct Padded<T> {
    inner: T,
    _zeros: [u64; 16],
}

impl<T> Padded<T> {
    fn new(inner: T) -> Self {
        Padded {
            inner,
            _zeros: [0; 16],
        }
    }
}

impl RdmEndpoint {
    /// Opens an RDM endpoint for two-sided messages (`FI_MSG`) on the selected provider.
    /// `cq_size` should cover the most operations in flight.
    pub fn open(lib: Arc<Libfabric>, selection: &Selection, cq_size: usize) -> Result<Self> {
        let info = choose(&lib, selection)?;
        let mut this = RdmEndpoint {
            info_summary: summary(&lib, info),
            // SAFETY: `info` is our own copy (fi_dupinfo).
            addr_format: unsafe { (*info).addr_format },
            lib,
            info,
            fabric: std::ptr::null_mut(),
            domain: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            av: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
            mrs: RefCell::new(Vec::new()),
        };
        // On error, Drop closes whatever was opened so far.
        this.open_resources(cq_size)?;
        Ok(this)
    }

    fn open_resources(&mut self, cq_size: usize) -> Result<()> {
        // SAFETY: every pointer passed comes from the library and is checked before use; the
        // ops tables are the provider's, as the C inlines use them.
        unsafe {
            let info = &*self.info;
            let rc = (self.lib.fabric)(info.fabric_attr, &mut self.fabric, std::ptr::null_mut());
            self.check(rc as isize, "fi_fabric")?;
            let fops = &*(*self.fabric).ops;
            let rc = fops.domain.expect("fi_domain")(
                self.fabric,
                self.info,
                &mut self.domain,
                std::ptr::null_mut(),
            );
            self.check(rc as isize, "fi_domain")?;
            let dops = &*(*self.domain).ops;

            let mut cq_attr = Padded::new(std::mem::zeroed::<ffi::fi_cq_attr>());
            cq_attr.inner.size = cq_size;
            cq_attr.inner.format = ffi::FI_CQ_FORMAT_MSG;
            cq_attr.inner.wait_obj = ffi::FI_WAIT_NONE;
            let rc = dops.cq_open.expect("fi_cq_open")(
                self.domain,
                &mut cq_attr.inner,
                &mut self.cq,
                std::ptr::null_mut(),
            );
            self.check(rc as isize, "fi_cq_open")?;

            let mut av_attr = Padded::new(std::mem::zeroed::<ffi::fi_av_attr>());
            av_attr.inner.type_ = (*info.domain_attr).av_type;
            av_attr.inner.count = 4;
            let rc = dops.av_open.expect("fi_av_open")(
                self.domain,
                &mut av_attr.inner,
                &mut self.av,
                std::ptr::null_mut(),
            );
            self.check(rc as isize, "fi_av_open")?;

            let rc = dops.endpoint.expect("fi_endpoint")(
                self.domain,
                self.info,
                &mut self.ep,
                std::ptr::null_mut(),
            );
            self.check(rc as isize, "fi_endpoint")?;
            let ep_fid = &mut (*self.ep).fid as *mut ffi::fid;
            let bind = (*(*self.ep).fid.ops).bind.expect("fi_ep_bind");
            let rc = bind(
                ep_fid,
                &mut (*self.cq).fid,
                (ffi::FI_SEND | ffi::FI_RECV) as u64,
            );
            self.check(rc as isize, "fi_ep_bind(cq)")?;
            let rc = bind(ep_fid, &mut (*self.av).fid, 0);
            self.check(rc as isize, "fi_ep_bind(av)")?;
            let control = (*(*self.ep).fid.ops).control.expect("fi_control");
            let rc = control(ep_fid, ffi::FI_ENABLE as i32, std::ptr::null_mut());
            self.check(rc as isize, "fi_enable")?;
        }
        Ok(())
    }

    /// This endpoint's address (`fi_getname`), to send to the peer.
    pub fn name(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: the endpoint is enabled; getname writes at most `len` bytes.
        unsafe {
            let getname = (*(*self.ep).cm).getname.expect("fi_getname");
            let ep_fid = &mut (*self.ep).fid as *mut ffi::fid;
            let mut rc = getname(ep_fid, buf.as_mut_ptr().cast(), &mut len);
            if rc == -(ffi::FI_ETOOSMALL as i32) {
                buf.resize(len, 0);
                rc = getname(ep_fid, buf.as_mut_ptr().cast(), &mut len);
            }
            self.check(rc as isize, "fi_getname")?;
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Adds the peer's address to the address vector (`fi_av_insert`).
    pub fn insert_peer(&mut self, address: &[u8]) -> Result<ffi::fi_addr_t> {
        let mut fi_addr = FI_ADDR_UNSPEC;
        // SAFETY: the address bytes come from the peer's fi_getname for the same provider
        // and address format (checked by the session handshake).
        let rc = unsafe {
            let insert = (*(*self.av).ops).insert.expect("fi_av_insert");
            insert(
                self.av,
                address.as_ptr().cast(),
                1,
                &mut fi_addr,
                0,
                std::ptr::null_mut(),
            )
        };
        if rc != 1 {
            let detail = if rc < 0 {
                self.lib.strerror(rc as i64)
            } else {
                "address not inserted".into()
            };
            return Err(Error::infra(format!(
                "fi_av_insert of the peer's address failed: {detail}"
            )));
        }
        Ok(fi_addr)
    }

    /// Registers `len` bytes at `buf` when the provider needs it; returns the descriptor to pass
    /// with each operation (null when registration is not needed).
    ///
    /// # Safety
    /// `buf..buf+len` must stay allocated until this endpoint is dropped.
    pub unsafe fn register(&self, buf: *mut u8, len: usize) -> Result<*mut c_void> {
        if !self.info_summary.mr_local {
            return Ok(std::ptr::null_mut());
        }
        let mut mr: *mut ffi::fid_mr = std::ptr::null_mut();
        // SAFETY: domain is open; the caller keeps the buffer alive.
        unsafe {
            let reg = (*(*self.domain).mr).reg.expect("fi_mr_reg");
            let access = (ffi::FI_SEND | ffi::FI_RECV) as u64;
            let rc = reg(
                &mut (*self.domain).fid,
                buf.cast(),
                len,
                access,
                0,
                0,
                0,
                &mut mr,
                std::ptr::null_mut(),
            );
            self.check(rc as isize, "fi_mr_reg")?;
            self.mrs.borrow_mut().push(mr);
            Ok((*mr).mem_desc)
        }
    }

    /// Posts a send. `Ok(false)` means the provider said "try again" (`-FI_EAGAIN`): poll the
    /// completion queue (which drives progress) and retry.
    ///
    /// # Safety
    /// `buf` and `context` must stay valid until the completion for `context` is read.
    pub unsafe fn post_send(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: ffi::fi_addr_t,
        context: *mut c_void,
    ) -> Result<bool> {
        // SAFETY: per the function contract.
        let rc = unsafe {
            let send = (*(*self.ep).msg).send.expect("fi_send");
            send(self.ep, buf.cast(), len, desc, dest, context)
        };
        self.posted(rc, "fi_send")
    }

    /// Posts a receive; see [`post_send`](Self::post_send).
    ///
    /// # Safety
    /// `buf` and `context` must stay valid until the completion for `context` is read.
    pub unsafe fn post_recv(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        context: *mut c_void,
    ) -> Result<bool> {
        // SAFETY: per the function contract.
        let rc = unsafe {
            let recv = (*(*self.ep).msg).recv.expect("fi_recv");
            recv(self.ep, buf.cast(), len, desc, FI_ADDR_UNSPEC, context)
        };
        self.posted(rc, "fi_recv")
    }

    fn posted(&self, rc: isize, what: &str) -> Result<bool> {
        if rc == -(ffi::FI_EAGAIN as isize) {
            return Ok(false);
        }
        self.check(rc, what)?;
        Ok(true)
    }

    /// Reads up to `out.len()` completions (`fi_cq_read`); 0 when none are ready. This is also
    /// what makes progress on providers with manual progress (tcp;ofi_rxm).
    pub fn poll(&self, out: &mut Vec<Completion>) -> Result<usize> {
        const BATCH: usize = 16;
        let mut entries: [ffi::fi_cq_msg_entry; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: the CQ was opened with FI_CQ_FORMAT_MSG, so entries have this layout.
        let n = unsafe {
            let read = (*(*self.cq).ops).read.expect("fi_cq_read");
            read(self.cq, entries.as_mut_ptr().cast(), BATCH)
        };
        if n == -(ffi::FI_EAGAIN as isize) {
            return Ok(0);
        }
        if n == -(ffi::FI_EAVAIL as isize) {
            return Err(self.completion_error());
        }
        self.check(n, "fi_cq_read")?;
        for e in &entries[..n as usize] {
            out.push(Completion {
                context: e.op_context,
                is_recv: e.flags & ffi::FI_RECV as u64 != 0,
                len: e.len,
            });
        }
        Ok(n as usize)
    }

    /// The error entry behind `-FI_EAVAIL`, as a readable error.
    fn completion_error(&self) -> Error {
        // SAFETY: fi_cq_readerr fills one error entry; strerror returns a provider string.
        unsafe {
            let mut err = Padded::new(std::mem::zeroed::<ffi::fi_cq_err_entry>());
            let ops = &*(*self.cq).ops;
            let rc = ops.readerr.expect("fi_cq_readerr")(self.cq, &mut err.inner, 0);
            if rc < 0 {
                return Error::infra(format!(
                    "fi_cq_readerr failed: {}",
                    self.lib.strerror(rc as i64)
                ));
            }
            let e = &err.inner;
            let detail = ops.strerror.map_or(String::new(), |f| {
                let p = f(self.cq, e.prov_errno, e.err_data, std::ptr::null_mut(), 0);
                super::library::cstr_or(Some(p), "")
            });
            let op = if e.flags & ffi::FI_RECV as u64 != 0 {
                "receive"
            } else {
                "send"
            };
            Error::Infrastructure {
                what: format!(
                    "a {op} completed with an error: {} (provider error {}{})",
                    self.lib.strerror(e.err as i64),
                    e.prov_errno,
                    if detail.is_empty() { String::new() } else { format!(": {detail}") }
                ),
                hint: Some("the peer may have exited; run with FI_LOG_LEVEL=warn to see libfabric's reason".into()),
            }
        }
    }

    fn check(&self, rc: isize, what: &str) -> Result<()> {
        if rc >= 0 {
            return Ok(());
        }
        Err(Error::Infrastructure {
            what: format!(
                "{what} failed on provider {}: {} ({rc})",
                self.info_summary.provider,
                self.lib.strerror(rc as i64)
            ),
            hint: Some("run with FI_LOG_LEVEL=warn to see libfabric's reason".into()),
        })
    }
}

impl Drop for RdmEndpoint {
    fn drop(&mut self) {
        // Close in reverse order of opening; each fid's ops->close is fi_close.
        unsafe fn close(fid: *mut ffi::fid) {
            if !fid.is_null() {
                // SAFETY: fid is a live object opened by the library.
                unsafe {
                    if let Some(close) = (*(*fid).ops).close {
                        close(fid);
                    }
                }
            }
        }
        // SAFETY: each pointer is null or an object we opened and have not closed.
        unsafe {
            for mr in self.mrs.get_mut().drain(..).rev() {
                close(&mut (*mr).fid);
            }
            if !self.ep.is_null() {
                close(&mut (*self.ep).fid);
            }
            if !self.av.is_null() {
                close(&mut (*self.av).fid);
            }
            if !self.cq.is_null() {
                close(&mut (*self.cq).fid);
            }
            if !self.domain.is_null() {
                close(&mut (*self.domain).fid);
            }
            if !self.fabric.is_null() {
                close(&mut (*self.fabric).fid);
            }
            (self.lib.freeinfo)(self.info);
        }
    }
}

/// The first RDM/FI_MSG match for the selection, as our own copy (`fi_dupinfo`).
fn choose(lib: &Libfabric, selection: &Selection) -> Result<*mut ffi::fi_info> {
    let mut hints = Hints::new(lib)?;
    if let Some(p) = &selection.provider {
        hints.provider(p)?;
    }
    // No domain hint: libfabric treats it loosely (layered providers ignore it, and an EFA
    // device name is not a domain name), so the entries are matched below instead.
    // SAFETY: hints and its attr structs were allocated by fi_allocinfo.
    unsafe {
        let h = &mut *hints.raw();
        h.caps = ffi::FI_MSG as u64 | ffi::FI_SEND as u64 | ffi::FI_RECV as u64;
        // We pass a zeroed fi_context2 with every operation, which satisfies both modes.
        h.mode = ffi::FI_CONTEXT | ffi::FI_CONTEXT2;
        (*h.ep_attr).type_ = ffi::FI_EP_RDM;
        // What fi_pingpong accepts: local registration when asked, basic-map semantics.
        (*h.domain_attr).mr_mode =
            (ffi::FI_MR_LOCAL | ffi::FI_MR_VIRT_ADDR | ffi::FI_MR_ALLOCATED | ffi::FI_MR_PROV_KEY)
                as i32;
    }
    let list = InfoList::get(lib, Some(&mut hints))?;
    let first = match &selection.domain {
        // libfabric treats the domain as a hint; the rail tested must be the rail chosen.
        Some(wanted) => list
            .iter()
            .find(|i| super::info::domain_matches(&ProviderEntry::from_info(lib, i).domain, wanted))
            .ok_or_else(|| {
                let domains = list
                    .iter()
                    .map(|i| ProviderEntry::from_info(lib, i).domain)
                    .collect();
                if list.is_empty() {
                    no_match(lib, selection)
                } else {
                    super::info::no_such_domain(wanted, selection.provider.as_deref(), &domains)
                }
            })?,
        None => list.iter().next().ok_or_else(|| no_match(lib, selection))?,
    };
    // SAFETY: duplicates one entry (fi_dupinfo copies only that entry, not the list).
    let copy = unsafe { (lib.dupinfo)(first) };
    if copy.is_null() {
        return Err(Error::infra("fi_dupinfo failed (out of memory)"));
    }
    Ok(copy)
}

fn no_match(lib: &Libfabric, selection: &Selection) -> Error {
    let available = super::info::list(lib, None, None)
        .map(|l| {
            let rdm: std::collections::BTreeSet<String> = l
                .entries
                .iter()
                .filter(|e| e.endpoint_type == "FI_EP_RDM")
                .map(|e| e.provider.clone())
                .collect();
            rdm.into_iter().collect::<Vec<_>>().join(", ")
        })
        .unwrap_or_default();
    let what = match (&selection.provider, &selection.domain) {
        (Some(p), Some(d)) => format!("provider `{p}` with domain `{d}`"),
        (Some(p), None) => format!("provider `{p}`"),
        (None, Some(d)) => format!("domain `{d}`"),
        (None, None) => "any provider".into(),
    };
    Error::missing(
        format!(
            "libfabric {} has no RDM endpoint with two-sided messages for {what}",
            lib.info().version
        ),
        if available.is_empty() {
            "no RDM provider is available at all; check `netcheck fabric --list`".into()
        } else {
            format!("RDM providers here: {available} (see `netcheck fabric --list`)")
        },
    )
}

fn summary(lib: &Libfabric, info: *mut ffi::fi_info) -> EndpointInfo {
    // SAFETY: our own copy of a returned entry.
    let info = unsafe { &*info };
    let entry = ProviderEntry::from_info(lib, info);
    // SAFETY: as above.
    let mr_mode = unsafe { info.domain_attr.as_ref().map_or(0, |d| d.mr_mode) };
    EndpointInfo {
        provider: entry.provider,
        provider_version: entry.provider_version,
        fabric: entry.fabric,
        domain: entry.domain,
        addr_format: entry.addr_format,
        max_msg_size: entry.max_msg_size,
        mr_local: mr_mode & ffi::FI_MR_LOCAL as i32 != 0,
    }
}
