//! libfabric as NCCL's OFI plugin will see it: which library, which providers, and whether the
//! `efa` provider sees the EFA devices that sysfs shows.

use serde::{Deserialize, Serialize};

use super::check::Check;
use crate::fabric::info::{self, EfaCount};
use crate::fabric::library::{Libfabric, LibraryInfo};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibfabricFacts {
    pub library: Option<LibraryInfo>,
    pub error: Option<String>,
    /// Providers offering RDM endpoints (what NCCL's OFI plugin uses).
    pub rdm_providers: Vec<String>,
    pub efa: EfaCount,
}

pub fn probe() -> LibfabricFacts {
    let lib = match Libfabric::load() {
        Ok(lib) => lib,
        Err(e) => {
            return LibfabricFacts {
                error: Some(e.to_string()),
                ..Default::default()
            };
        }
    };
    let mut facts = LibfabricFacts {
        library: Some(lib.info()),
        ..Default::default()
    };
    match info::list(&lib, None, None) {
        Ok(listing) => {
            // Distinct names, in libfabric's order of preference.
            let mut seen = std::collections::BTreeSet::new();
            facts.rdm_providers = listing
                .entries
                .iter()
                .filter(|e| e.endpoint_type == "FI_EP_RDM" && seen.insert(e.provider.clone()))
                .map(|e| e.provider.clone())
                .collect();
            facts.efa = listing.efa;
        }
        Err(e) => facts.error = Some(e.to_string()),
    }
    facts
}

/// The `libfabric` check. `efa_in_sysfs`: EFA devices the kernel shows.
pub fn check(facts: &LibfabricFacts, efa_in_sysfs: usize, required: bool) -> Check {
    const ID: &str = "libfabric";
    let needed = required || efa_in_sysfs > 0;
    let Some(lib) = &facts.library else {
        let summary = "libfabric not found: `netcheck fabric` and NCCL's OFI plugin cannot run";
        // Required by the user and not there: a missing environment; needed because EFA
        // devices are present: something broken (exit 1).
        let check = if required {
            Check::fail(ID, summary).absent()
        } else if needed {
            Check::fail(ID, summary)
        } else {
            Check::warn(ID, summary)
        };
        return check
            .with_evidence(facts.error.iter().cloned())
            .with_hint("install libfabric (Debian/Ubuntu: libfabric1; on AWS the EFA installer, /opt/amazon/efa/lib)");
    };
    let mut evidence = vec![
        format!("{} (API {})", lib.path, lib.version),
        format!(
            "RDM providers: {}",
            if facts.rdm_providers.is_empty() {
                "none".into()
            } else {
                facts.rdm_providers.join(", ")
            }
        ),
    ];
    evidence.extend(facts.error.iter().cloned());
    let efa_seen = facts.efa.devices.len();
    if efa_seen > 0 {
        evidence.push(format!(
            "efa provider devices: {}",
            facts.efa.devices.join(", ")
        ));
    }
    if efa_in_sysfs > 0 && efa_seen == 0 {
        return Check::fail(ID, format!("libfabric {} lists no efa provider although the kernel shows {efa_in_sysfs} EFA device(s)", lib.version))
            .with_evidence(evidence)
            .with_hint("use the EFA installer's libfabric (/opt/amazon/efa/lib) rather than a distribution build, and check that /dev/infiniband is available to this process");
    }
    if efa_in_sysfs > 0 && efa_seen < efa_in_sysfs {
        return Check::fail(
            ID,
            format!("libfabric's efa provider sees {efa_seen} of the {efa_in_sysfs} EFA devices"),
        )
        .with_evidence(evidence)
        .with_hint(
            "the missing devices are not usable by this process (device nodes or permissions)",
        );
    }
    if efa_in_sysfs > 0 && version_below(&lib.version, (1, 22)) {
        return Check::warn(
            ID,
            format!(
                "libfabric {} is older than 1.22, which recent aws-ofi-nccl requires for EFA",
                lib.version
            ),
        )
        .with_evidence(evidence)
        .with_hint("update the EFA installer (its libfabric lives in /opt/amazon/efa/lib)");
    }
    let summary = if efa_seen > 0 {
        format!(
            "libfabric {}, efa provider sees {efa_seen} device(s)",
            lib.version
        )
    } else {
        format!(
            "libfabric {} ({} RDM providers)",
            lib.version,
            facts.rdm_providers.len()
        )
    };
    Check::ok(ID, summary).with_evidence(evidence)
}

fn version_below(version: &str, (major, minor): (u32, u32)) -> bool {
    super::gpu::parse_major_minor(version).is_some_and(|v| v < (major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    fn facts(version: &str, efa: &[&str]) -> LibfabricFacts {
        LibfabricFacts {
            library: Some(LibraryInfo {
                path: "/opt/amazon/efa/lib/libfabric.so.1".into(),
                version: version.into(),
            }),
            error: None,
            rdm_providers: vec!["efa".into(), "tcp;ofi_rxm".into()],
            efa: EfaCount {
                devices: efa.iter().map(|s| s.to_string()).collect(),
                rdm_entries: efa.len() * 2,
                fabrics: vec!["efa".into()],
            },
        }
    }

    #[test]
    fn efa_in_sysfs_must_show_up_in_libfabric() {
        assert_eq!(
            check(&facts("1.22", &["a", "b"]), 2, false).status,
            Status::Ok
        );
        assert_eq!(check(&facts("1.22", &[]), 2, false).status, Status::Fail);
        assert_eq!(check(&facts("1.22", &["a"]), 2, false).status, Status::Fail);
        assert_eq!(
            check(&facts("1.20", &["a", "b"]), 2, false).status,
            Status::Warn
        );
        assert_eq!(check(&facts("1.17", &[]), 0, false).status, Status::Ok);
    }

    #[test]
    fn missing_libfabric_matters_only_when_needed() {
        let none = LibfabricFacts {
            error: Some("not found".into()),
            ..Default::default()
        };
        assert_eq!(check(&none, 0, false).status, Status::Warn);
        assert_eq!(check(&none, 2, false).status, Status::Fail);
        assert_eq!(check(&none, 0, true).status, Status::Fail);
    }
}
