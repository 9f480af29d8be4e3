//! What `netcheck fabric` prints: the ping-pong report (`netcheck.fabric.v1`) and the provider
//! listing, each built once as typed data and rendered as JSON or as a text table.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::endpoint::EndpointInfo;
use super::info::{self, Listing};
use super::library::LibraryInfo;
use super::pingpong::{Plan, SizeResult};
use crate::config::format_bytes;

pub const REPORT_SCHEMA: &str = "netcheck.fabric.v1";

/// One ping-pong session as the driver saw it. This is what goes into `RunRecord.fabric`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FabricReport {
    pub schema: String,
    /// `local` (two processes on this host) or `remote` (two hosts).
    pub mode: String,
    pub started_at: String,
    /// The driver (this process).
    pub local: Side,
    pub peer: Side,
    pub plan: Plan,
    pub results: Vec<SizeResult>,
    /// `pass` when every size came back intact, else `fail`.
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Side {
    pub host: String,
    pub libfabric: LibraryInfo,
    pub endpoint: EndpointInfo,
    /// The out-of-band address used to reach this side, where there is one.
    pub address: Option<String>,
}

impl FabricReport {
    pub fn new(
        mode: &str,
        started_at: String,
        local: Side,
        peer: Side,
        plan: Plan,
        results: Vec<SizeResult>,
    ) -> Self {
        let ok = results.iter().all(|r| r.payload_ok);
        FabricReport {
            schema: REPORT_SCHEMA.into(),
            mode: mode.into(),
            started_at,
            local,
            peer,
            plan,
            results,
            verdict: if ok { "pass" } else { "fail" }.into(),
        }
    }

    pub fn passed(&self) -> bool {
        self.verdict == "pass"
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let l = &self.local;
        let p = &self.peer;
        let _ = writeln!(
            out,
            "# provider {} {} (fabric {}), libfabric {}",
            l.endpoint.provider,
            l.endpoint.provider_version,
            l.endpoint.fabric,
            l.libfabric.version
        );
        let _ = writeln!(
            out,
            "# {} domain {}  <->  {} domain {}{}",
            l.host,
            l.endpoint.domain,
            p.host,
            p.endpoint.domain,
            if self.mode == "local" {
                " (two processes on this host)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "# ping-pong: {} timed round trips after {} warm-up; stream: {} windows of {} messages",
            self.plan.iters, self.plan.warmup, self.plan.batches, self.plan.window
        );
        let _ = writeln!(
            out,
            "{:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>10}  payload",
            "size", "rtt p50 us", "rtt p99 us", "rtt mean", "rtt max", "one-way us", "bw GB/s"
        );
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:>8} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>11.2} {:>10} {:>8}",
                format_bytes(r.bytes),
                r.rtt_us.p50,
                r.rtt_us.p99,
                r.rtt_us.mean,
                r.rtt_us.max,
                r.one_way_us,
                r.stream.gbs.map_or("-".into(), significant),
                if r.payload_ok { "ok" } else { "WRONG" }
            );
        }
        let _ = writeln!(out, "# verdict: {}", self.verdict);
        out
    }
}

/// The provider listing as a text table: one row per provider.
pub fn listing_text(listing: &Listing) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# libfabric {} ({})",
        listing.libfabric.version, listing.libfabric.path
    );
    if listing.entries.is_empty() {
        let _ = writeln!(
            out,
            "no providers{}",
            listing
                .filter
                .as_ref()
                .map_or(String::new(), |f| format!(" match `{f}`"))
        );
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["PROVIDER", "VERSION", "EP TYPES", "FABRICS", "DOMAINS"]);
    for g in info::group(&listing.entries) {
        table.add_row([
            g.provider,
            join(&g.versions, ", "),
            join(&g.endpoint_types, ","),
            join_capped(&g.fabrics, 3),
            join_capped(&g.domains, 4),
        ]);
    }
    if !listing.entries.is_empty() {
        let _ = writeln!(out, "{table}");
    }
    let efa = &listing.efa;
    if efa.devices.is_empty() {
        let _ = writeln!(out, "EFA devices: none (libfabric lists no `efa` provider)");
    } else {
        let _ = writeln!(
            out,
            "EFA devices: {} ({}); {} efa RDM entries across fabrics {}",
            efa.devices.len(),
            efa.devices.join(", "),
            efa.rdm_entries,
            efa.fabrics.join(", ")
        );
    }
    out
}

/// Three significant digits, so 0.000123 GB/s (tiny messages) does not print as 0.000.
fn significant(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return format!("{x}");
    }
    let decimals = (2 - x.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.decimals$}")
}

fn join(set: &std::collections::BTreeSet<String>, sep: &str) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(sep)
}

/// Long lists (tcp lists every interface) stay readable: the first few, then "+N more".
fn join_capped(set: &std::collections::BTreeSet<String>, cap: usize) -> String {
    let mut items: Vec<String> = set.iter().take(cap).cloned().collect();
    if set.len() > cap {
        items.push(format!("+{} more", set.len() - cap));
    }
    items.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::pingpong::{LatencyStats, StreamResult};

    fn side(host: &str) -> Side {
        Side {
            host: host.into(),
            libfabric: LibraryInfo {
                path: "/lib/libfabric.so.1".into(),
                version: "1.17".into(),
            },
            endpoint: EndpointInfo {
                provider: "tcp;ofi_rxm".into(),
                provider_version: "117.0".into(),
                fabric: "127.0.0.0/8".into(),
                domain: "lo".into(),
                addr_format: "FI_SOCKADDR_IN".into(),
                max_msg_size: 1 << 30,
                mr_local: false,
            },
            address: None,
        }
    }

    fn result(bytes: u64, ok: bool) -> SizeResult {
        SizeResult {
            bytes,
            iters: 10,
            rtt_us: LatencyStats {
                min: 1.0,
                p50: 2.0,
                p99: 3.0,
                max: 4.0,
                mean: 2.1,
            },
            one_way_us: 1.0,
            stream: StreamResult {
                messages: 64,
                bytes: 64 * bytes,
                seconds: 0.5,
                gbs: Some(0.25),
            },
            payload_ok: ok,
        }
    }

    #[test]
    fn one_wrong_payload_fails_the_report() {
        let plan = Plan::default();
        let good = FabricReport::new(
            "local",
            "t".into(),
            side("a"),
            side("b"),
            plan.clone(),
            vec![result(8, true)],
        );
        assert!(good.passed());
        let bad = FabricReport::new(
            "local",
            "t".into(),
            side("a"),
            side("b"),
            plan,
            vec![result(8, true), result(64, false)],
        );
        assert!(!bad.passed());
        let text = bad.to_text();
        assert!(text.contains("WRONG"), "{text}");
        assert!(text.contains("verdict: fail"), "{text}");
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let r = FabricReport::new(
            "remote",
            "t".into(),
            side("a"),
            side("b"),
            Plan::default(),
            vec![result(4096, true)],
        );
        let json = serde_json::to_string(&r).unwrap();
        let back: FabricReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert!(json.contains(r#""schema":"netcheck.fabric.v1""#));
    }

    #[test]
    fn bandwidth_keeps_three_significant_digits() {
        assert_eq!(significant(12.3456), "12.3");
        assert_eq!(significant(1.23456), "1.23");
        assert_eq!(significant(0.000123456), "0.000123");
        assert_eq!(significant(1234.5), "1234");
    }

    #[test]
    fn long_lists_are_capped() {
        let set: std::collections::BTreeSet<String> = (0..6).map(|i| format!("eth{i}")).collect();
        assert_eq!(join_capped(&set, 2), "eth0, eth1, +4 more");
    }
}
