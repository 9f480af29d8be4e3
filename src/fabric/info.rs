//! `fi_getinfo`: hints, the returned list, and the provider listing of `netcheck fabric --list`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_char;

use serde::{Deserialize, Serialize};

use super::ffi;
use super::library::{Libfabric, LibraryInfo, cstr_or, format_version, strdup};
use crate::error::{Error, Result};

pub const LISTING_SCHEMA: &str = "netcheck.fabric.providers.v1";

/// A hints `fi_info`, allocated by the library (`fi_dupinfo(NULL)`, i.e. `fi_allocinfo`) so its
/// layout is the library's own, and freed with `fi_freeinfo`, which also frees the strings.
pub struct Hints<'l> {
    lib: &'l Libfabric,
    ptr: *mut ffi::fi_info,
}

impl<'l> Hints<'l> {
    pub fn new(lib: &'l Libfabric) -> Result<Self> {
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info with all attr structs.
        let ptr = unsafe { (lib.dupinfo)(std::ptr::null()) };
        if ptr.is_null() {
            return Err(Error::infra("fi_allocinfo failed (out of memory)"));
        }
        Ok(Hints { lib, ptr })
    }

    /// Hints the way `fi_info` builds them: the application accepts every mode and mr_mode bit,
    /// so no provider is hidden because of what it asks of applications.
    pub fn everything(lib: &'l Libfabric) -> Result<Self> {
        let hints = Self::new(lib)?;
        // SAFETY: ptr and its attr pointers were allocated by fi_allocinfo.
        unsafe {
            (*hints.ptr).mode = !0;
            (*(*hints.ptr).domain_attr).mode = !0;
            (*(*hints.ptr).domain_attr).mr_mode =
                !((ffi::FI_MR_BASIC | ffi::FI_MR_SCALABLE) as i32);
        }
        Ok(hints)
    }

    pub fn provider(&mut self, name: &str) -> Result<&mut Self> {
        let s = strdup(name)?;
        // SAFETY: fabric_attr is allocated; the old value is null after fi_allocinfo.
        unsafe { (*(*self.ptr).fabric_attr).prov_name = s };
        Ok(self)
    }

    pub fn domain(&mut self, name: &str) -> Result<&mut Self> {
        let s = strdup(name)?;
        // SAFETY: as above.
        unsafe { (*(*self.ptr).domain_attr).name = s };
        Ok(self)
    }

    pub fn raw(&mut self) -> *mut ffi::fi_info {
        self.ptr
    }
}

impl Drop for Hints<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by fi_dupinfo; strings were strdup'd.
        unsafe { (self.lib.freeinfo)(self.ptr) };
    }
}

/// The linked list `fi_getinfo` returns; freed on drop.
pub struct InfoList<'l> {
    lib: &'l Libfabric,
    head: *mut ffi::fi_info,
}

impl<'l> InfoList<'l> {
    /// `fi_getinfo(version, NULL, NULL, 0, hints)`. "No match" is an empty list, not an error.
    pub fn get(lib: &'l Libfabric, hints: Option<&mut Hints<'_>>) -> Result<Self> {
        let mut head = std::ptr::null_mut();
        let hints = hints.map_or(std::ptr::null(), |h| h.raw() as *const _);
        let null = std::ptr::null::<c_char>();
        // SAFETY: all pointers are valid or null as fi_getinfo allows.
        let rc = unsafe { (lib.getinfo)(lib.api_version(), null, null, 0, hints, &mut head) };
        if rc == -(ffi::FI_ENODATA as i32) {
            return Ok(InfoList {
                lib,
                head: std::ptr::null_mut(),
            });
        }
        if rc != 0 {
            return Err(Error::infra(format!(
                "fi_getinfo failed: {} ({rc})",
                lib.strerror(rc as i64)
            )));
        }
        Ok(InfoList { lib, head })
    }

    pub fn iter(&self) -> impl Iterator<Item = &ffi::fi_info> {
        let mut next = self.head;
        std::iter::from_fn(move || {
            // SAFETY: the list stays alive while `self` is borrowed.
            let item = unsafe { next.as_ref() }?;
            next = item.next;
            Some(item)
        })
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }
}

impl Drop for InfoList<'_> {
    fn drop(&mut self) {
        if !self.head.is_null() {
            // SAFETY: returned by fi_getinfo.
            unsafe { (self.lib.freeinfo)(self.head) };
        }
    }
}

/// One `fi_getinfo` entry, the fields `fi_info` prints that people look at.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProviderEntry {
    /// `tcp;ofi_rxm`, `efa`, ... (a utility provider layered on a core one is joined by `;`).
    pub provider: String,
    pub provider_version: String,
    pub fabric: String,
    pub domain: String,
    /// `FI_EP_RDM`, `FI_EP_MSG`, `FI_EP_DGRAM`.
    pub endpoint_type: String,
    pub protocol: String,
    pub addr_format: String,
    /// The largest message, bytes. In JSON: a number when JSON's doubles hold it exactly
    /// (up to 2^53), `null` for libfabric's "unlimited" (`SIZE_MAX`), else a string.
    #[serde(with = "msg_size")]
    pub max_msg_size: u64,
}

/// `max_msg_size` in JSON (the provider listing and the fabric report):
/// `18446744073709551615` (SIZE_MAX, "no limit") is beyond the integers a JSON reader in
/// doubles holds exactly, and would read back as another number.
pub mod msg_size {
    use serde::{Deserialize, Deserializer, Serializer};

    /// The largest integer a double holds exactly.
    const EXACT: u64 = 1 << 53;

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            u64::MAX => s.serialize_none(),
            v if v <= EXACT => s.serialize_u64(v),
            v => s.serialize_str(&v.to_string()),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(u64::MAX),
            Some(Raw::Number(n)) => Ok(n),
            Some(Raw::Text(t)) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl ProviderEntry {
    /// Reads the strings and numbers out of an entry the library owns.
    pub fn from_info(lib: &Libfabric, info: &ffi::fi_info) -> ProviderEntry {
        // SAFETY: attr pointers of a returned fi_info are valid or null; strings NUL-terminated.
        unsafe {
            let fabric = info.fabric_attr.as_ref();
            let domain = info.domain_attr.as_ref();
            let ep = info.ep_attr.as_ref();
            let ep_type = ep.map_or(0, |e| e.type_);
            let protocol = ep.map_or(0, |e| e.protocol);
            ProviderEntry {
                provider: cstr_or(fabric.map(|f| f.prov_name as *const c_char), "?"),
                provider_version: fabric.map_or("?".into(), |f| format_version(f.prov_version)),
                fabric: cstr_or(fabric.map(|f| f.name as *const c_char), "?"),
                domain: cstr_or(domain.map(|d| d.name as *const c_char), "?"),
                endpoint_type: lib
                    .enum_name(ep_type, ffi::FI_TYPE_EP_TYPE)
                    .unwrap_or_else(|| format!("ep_type {ep_type}")),
                protocol: lib
                    .enum_name(protocol, ffi::FI_TYPE_PROTOCOL)
                    .unwrap_or_else(|| format!("protocol {protocol}")),
                addr_format: lib
                    .enum_name(info.addr_format, ffi::FI_TYPE_ADDR_FORMAT)
                    .unwrap_or_else(|| format!("addr_format {}", info.addr_format)),
                max_msg_size: ep.map_or(0, |e| e.max_msg_size as u64),
            }
        }
    }
}

/// `netcheck fabric --list` output.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Listing {
    pub schema: String,
    pub libfabric: LibraryInfo,
    /// The provider filter, when one was given.
    pub filter: Option<String>,
    /// The domain filter (`--domain`), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_filter: Option<String>,
    pub entries: Vec<ProviderEntry>,
    pub efa: EfaCount,
}

/// EFA devices as libfabric sees them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EfaCount {
    /// Devices (`rdmap16s27`, ...): the distinct `efa` domains without their `-rdm`/`-dgrm`
    /// suffix. This is what `fi_info -p efa -t FI_EP_RDM | grep -c provider` divided by the
    /// number of fabrics per device (`efa`, and `efa-direct` on newer libfabric) counts.
    pub devices: Vec<String>,
    /// The raw count of `efa` RDM entries (one per device and fabric).
    pub rdm_entries: usize,
    pub fabrics: Vec<String>,
}

impl EfaCount {
    pub fn from_entries(entries: &[ProviderEntry]) -> EfaCount {
        let efa: Vec<_> = entries.iter().filter(|e| e.provider == "efa").collect();
        let devices: BTreeSet<String> = efa.iter().map(|e| efa_device_of(&e.domain)).collect();
        let fabrics: BTreeSet<String> = efa.iter().map(|e| e.fabric.clone()).collect();
        EfaCount {
            devices: devices.into_iter().collect(),
            rdm_entries: efa
                .iter()
                .filter(|e| e.endpoint_type == "FI_EP_RDM")
                .count(),
            fabrics: fabrics.into_iter().collect(),
        }
    }
}

/// `rdmap16s27-rdm` → `rdmap16s27`.
pub fn efa_device_of(domain: &str) -> String {
    for suffix in ["-rdm", "-dgrm"] {
        if let Some(device) = domain.strip_suffix(suffix) {
            return device.to_string();
        }
    }
    domain.to_string()
}

/// Whether a libfabric domain is the one a user named: the same name, or the EFA device
/// of an `efa` domain (`rdmap16s27` names `rdmap16s27-rdm` and `rdmap16s27-dgrm`).
///
/// libfabric does not do this for us: a domain name in the hints is only a hint, and layered
/// providers (`tcp;ofi_rxm`) return every domain whatever it says.
pub fn domain_matches(domain: &str, wanted: &str) -> bool {
    domain == wanted || efa_device_of(domain) == wanted
}

/// The error for a domain that no entry has: exit 3, with the domains there are.
pub fn no_such_domain(wanted: &str, provider: Option<&str>, domains: &BTreeSet<String>) -> Error {
    let of = provider.map_or(String::new(), |p| format!(" of provider `{p}`"));
    Error::missing(
        format!("libfabric has no domain `{wanted}`{of}"),
        if domains.is_empty() {
            "libfabric lists no domain at all; see `netcheck fabric --list`".into()
        } else {
            format!(
                "domains here: {} (an interface for tcp, an EFA device such as rdmap16s27 for efa)",
                domains.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        },
    )
}

/// The provider asked for is not there (`--provider efa` on a host without EFA): a missing
/// environment, with the providers that are.
pub fn no_such_provider(wanted: &str, present: &BTreeSet<String>) -> Error {
    Error::missing(
        format!("libfabric offers no provider `{wanted}` on this host"),
        if present.is_empty() {
            "libfabric lists no provider at all; check its install (`fi_info`)".into()
        } else {
            format!(
                "providers here: {}{}",
                present.iter().cloned().collect::<Vec<_>>().join(", "),
                if wanted == "efa" {
                    " (efa needs an EFA device and the aws-efa-installer's libfabric)"
                } else {
                    ""
                }
            )
        },
    )
}

/// Every provider entry the library offers, optionally only one provider's and one domain's.
/// A provider or a domain that no entry has is a missing environment (exit 3), not an empty
/// list: a node-validation script running `fabric --list --provider efa` must not pass on a
/// host without EFA.
pub fn list(lib: &Libfabric, provider: Option<&str>, domain: Option<&str>) -> Result<Listing> {
    let mut hints = Hints::everything(lib)?;
    if let Some(p) = provider {
        hints.provider(p)?;
    }
    let list = InfoList::get(lib, Some(&mut hints))?;
    let mut entries: Vec<ProviderEntry> = list
        .iter()
        .map(|i| ProviderEntry::from_info(lib, i))
        .collect();
    if let Some(wanted) = provider
        && entries.is_empty()
    {
        let mut all = Hints::everything(lib)?;
        let present: BTreeSet<String> = InfoList::get(lib, Some(&mut all))?
            .iter()
            .map(|i| ProviderEntry::from_info(lib, i).provider)
            .collect();
        return Err(no_such_provider(wanted, &present));
    }
    if let Some(wanted) = domain {
        let domains: BTreeSet<String> = entries.iter().map(|e| e.domain.clone()).collect();
        entries.retain(|e| domain_matches(&e.domain, wanted));
        if entries.is_empty() {
            return Err(no_such_domain(wanted, provider, &domains));
        }
    }
    Ok(Listing {
        schema: LISTING_SCHEMA.into(),
        libfabric: lib.info(),
        filter: provider.map(str::to_string),
        domain_filter: domain.map(str::to_string),
        efa: EfaCount::from_entries(&entries),
        entries,
    })
}

/// One row per provider for the text view: versions, endpoint types, fabrics and domains.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderGroup {
    pub provider: String,
    pub versions: BTreeSet<String>,
    pub endpoint_types: BTreeSet<String>,
    pub fabrics: BTreeSet<String>,
    pub domains: BTreeSet<String>,
}

pub fn group(entries: &[ProviderEntry]) -> Vec<ProviderGroup> {
    let mut groups: BTreeMap<&str, ProviderGroup> = BTreeMap::new();
    let mut order = Vec::new();
    for e in entries {
        let g = groups.entry(&e.provider).or_insert_with(|| {
            order.push(e.provider.clone());
            ProviderGroup {
                provider: e.provider.clone(),
                ..Default::default()
            }
        });
        g.versions.insert(e.provider_version.clone());
        g.endpoint_types
            .insert(e.endpoint_type.trim_start_matches("FI_EP_").to_string());
        g.fabrics.insert(e.fabric.clone());
        g.domains.insert(e.domain.clone());
    }
    // Keep libfabric's order (its preference), not alphabetical.
    order
        .iter()
        .filter_map(|p| groups.remove(p.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(provider: &str, fabric: &str, domain: &str, ep: &str) -> ProviderEntry {
        ProviderEntry {
            provider: provider.into(),
            provider_version: "1.0".into(),
            fabric: fabric.into(),
            domain: domain.into(),
            endpoint_type: ep.into(),
            protocol: "FI_PROTO_EFA".into(),
            addr_format: "FI_ADDR_EFA".into(),
            max_msg_size: 1 << 30,
        }
    }

    #[test]
    fn efa_devices_are_counted_once_per_device_across_fabrics_and_endpoint_types() {
        // What libfabric lists for two EFA devices when both the efa and efa-direct fabrics
        // exist: an RDM entry per device per fabric, plus DGRAM entries.
        let entries = vec![
            entry("efa", "efa", "rdmap16s27-rdm", "FI_EP_RDM"),
            entry("efa", "efa-direct", "rdmap16s27-rdm", "FI_EP_RDM"),
            entry("efa", "efa", "rdmap16s27-dgrm", "FI_EP_DGRAM"),
            entry("efa", "efa", "rdmap32s27-rdm", "FI_EP_RDM"),
            entry("efa", "efa-direct", "rdmap32s27-rdm", "FI_EP_RDM"),
            entry("efa", "efa", "rdmap32s27-dgrm", "FI_EP_DGRAM"),
            entry("tcp;ofi_rxm", "10.0.0.0/16", "eth0", "FI_EP_RDM"),
        ];
        let efa = EfaCount::from_entries(&entries);
        assert_eq!(efa.devices, vec!["rdmap16s27", "rdmap32s27"]);
        assert_eq!(efa.rdm_entries, 4);
        assert_eq!(efa.fabrics, vec!["efa", "efa-direct"]);
    }

    #[test]
    fn a_domain_matches_by_name_or_by_efa_device() {
        assert!(domain_matches("lo", "lo"));
        assert!(!domain_matches("eth0", "lo"));
        assert!(domain_matches("rdmap16s27-rdm", "rdmap16s27"));
        assert!(domain_matches("rdmap16s27-rdm", "rdmap16s27-rdm"));
        assert!(!domain_matches("rdmap16s27-rdm", "rdmap16s2"));
        assert!(!domain_matches("rdmap16s27-dgrm", "rdmap16s27-rdm"));
    }

    #[test]
    fn no_efa_provider_means_no_devices() {
        let efa = EfaCount::from_entries(&[entry("tcp", "lo", "lo", "FI_EP_MSG")]);
        assert!(efa.devices.is_empty());
        assert_eq!(efa.rdm_entries, 0);
    }

    #[test]
    fn groups_keep_libfabric_order_and_collect_domains() {
        let entries = vec![
            entry("tcp;ofi_rxm", "f", "eth0", "FI_EP_RDM"),
            entry("shm", "shm", "shm", "FI_EP_RDM"),
            entry("tcp;ofi_rxm", "f", "lo", "FI_EP_RDM"),
        ];
        let groups = group(&entries);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].provider, "tcp;ofi_rxm");
        assert_eq!(groups[0].domains.iter().collect::<Vec<_>>(), ["eth0", "lo"]);
        assert_eq!(groups[0].endpoint_types.iter().collect::<Vec<_>>(), ["RDM"]);
    }

    #[test]
    fn max_msg_size_in_json_is_exact_or_null_for_unlimited() {
        let mut e = entry("tcp", "f", "lo", "FI_EP_RDM");
        for (size, json) in [
            (1u64 << 30, "1073741824"),
            (u64::MAX, "null"),
            ((1 << 53) + 1, "\"9007199254740993\""),
        ] {
            e.max_msg_size = size;
            let text = serde_json::to_string(&e).unwrap();
            assert!(text.contains(&format!("\"max_msg_size\":{json}")), "{text}");
            let back: ProviderEntry = serde_json::from_str(&text).unwrap();
            assert_eq!(back.max_msg_size, size);
        }
    }

    #[test]
    fn a_missing_provider_names_the_ones_present() {
        let present: BTreeSet<String> = ["tcp".to_string(), "udp".to_string()].into();
        let e = no_such_provider("efa", &present);
        assert_eq!(e.exit_code(), crate::exit::MISSING_ENVIRONMENT);
        assert!(e.to_string().contains("no provider `efa`"), "{e}");
        assert!(e.hint().unwrap().contains("tcp, udp"), "{:?}", e.hint());
    }
}
