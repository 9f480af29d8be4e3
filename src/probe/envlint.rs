//! Environment variables that are obsolete, harmful or contradict the hardware. Sources:
//! aws-ofi-nccl `doc/efa-env-var.md` (EFA variables), NCCL's environment documentation
//! (NCCL_SOCKET_IFNAME syntax, NCCL_NET_PLUGIN), and the facts gathered elsewhere in `doctor`.
//! One rule is one small function; each returns the checks it raises.

use std::collections::BTreeMap;

use super::check::Check;

/// What the rules may look at besides the variables.
#[derive(Debug, Clone, Default)]
pub struct LintContext {
    pub efa_devices: usize,
    /// InfiniBand or RoCE devices (NCCL's built-in IB transport uses these).
    pub ib_devices: usize,
    /// Network interfaces on this host (`/sys/class/net`).
    pub interfaces: Vec<String>,
    /// The net plugin NCCL will open here is aws-ofi-nccl, and it loads.
    pub ofi_plugin: bool,
    /// libfabric's RDM providers in this environment (FI_PROVIDER applied), as the OFI
    /// plugin will see them; `None` without libfabric.
    pub rdm_providers: Option<Vec<String>>,
}

impl LintContext {
    /// What aws-ofi-nccl will run on when libfabric's network providers are all TCP/UDP (the
    /// shared-memory ones, shm and sm2, cannot reach another host and are not picked).
    fn ofi_on_tcp_only(&self) -> Option<Vec<&str>> {
        let providers = self.rdm_providers.as_deref()?;
        let tcp = |p: &&str| {
            let p = p.to_ascii_lowercase();
            p.starts_with("tcp") || p.starts_with("sockets") || p.starts_with("udp")
        };
        let network: Vec<&str> = providers
            .iter()
            .map(String::as_str)
            .filter(|p| !host_only(p))
            .collect();
        (self.ofi_plugin && self.efa_devices == 0 && !network.is_empty() && network.iter().all(tcp))
            .then_some(network)
    }
}

/// libfabric's shared-memory providers (`shm`, `sm2`): they reach only this host's processes.
fn host_only(provider: &str) -> bool {
    let p = provider.to_ascii_lowercase();
    p.starts_with("shm") || p.starts_with("sm2")
}

type Env = BTreeMap<String, String>;
type Rule = fn(&Env, &LintContext) -> Vec<Check>;

const RULES: &[Rule] = &[
    efa_obsolete,
    rdmav,
    fi_provider,
    ofi_on_tcp,
    ofi_no_provider,
    pinned_network,
    forced_protocol_or_algorithm,
    socket_ifname,
    nvls,
    transports_disabled,
    topo_file,
    cuda_visible_devices,
];

/// Variables worth showing in reports.
pub fn is_relevant(name: &str) -> bool {
    [
        "NCCL_",
        "FI_",
        "OFI_",
        "RDMAV_",
        "CUDA_VISIBLE_DEVICES",
        "LD_LIBRARY_PATH",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Every rule's findings; when there are none, one `env` check listing what was looked at.
pub fn lint(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let findings: Vec<Check> = RULES.iter().flat_map(|rule| rule(env, ctx)).collect();
    if !findings.is_empty() {
        return findings;
    }
    let seen: Vec<String> = env
        .iter()
        .filter(|(k, _)| is_relevant(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    vec![
        Check::ok(
            "env",
            format!(
                "no obsolete or harmful NCCL/libfabric variables ({} relevant set)",
                seen.len()
            ),
        )
        .with_evidence(seen),
    ]
}

fn finding(name: &str, value: &str, check: fn(String, String) -> Check, summary: String) -> Check {
    check(format!("env.{name}"), summary).with_evidence([format!("{name}={value}")])
}

fn efa_obsolete(env: &Env, _: &LintContext) -> Vec<Check> {
    let mut out = Vec::new();
    if let Some(v) = env.get("FI_EFA_USE_DEVICE_RDMA") {
        out.push(
            finding("FI_EFA_USE_DEVICE_RDMA", v, Check::warn, "obsolete: not needed with libfabric >= 1.18 and aws-ofi-nccl >= 1.7 (AWS says do not set it)".into())
                .with_hint("remove it; libfabric turns on device RDMA by itself where the hardware has it"),
        );
    }
    if let Some(v) = env.get("FI_EFA_FORK_SAFE") {
        out.push(
            finding(
                "FI_EFA_FORK_SAFE",
                v,
                Check::warn,
                "obsolete: aws-ofi-nccl sets it itself".into(),
            )
            .with_hint("remove it"),
        );
    }
    out
}

fn rdmav(env: &Env, _: &LintContext) -> Vec<Check> {
    env.iter()
        .filter(|(k, _)| k.starts_with("RDMAV_"))
        .map(|(k, v)| {
            finding(k, v, Check::warn, "aws-ofi-nccl's EFA guide says not to use RDMAV_* variables (fork safety is handled by libfabric)".into())
                .with_hint("remove it; if fork() fails with ENOMEM, FI_EFA_USE_HUGE_PAGE=0 is the documented fix")
        })
        .collect()
}

fn fi_provider(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("FI_PROVIDER") else {
        return Vec::new();
    };
    let names: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with('^'))
        .collect();
    let allows_efa = names.is_empty() || names.contains(&"efa");
    if ctx.efa_devices > 0 && !allows_efa {
        return vec![
            finding("FI_PROVIDER", v, Check::fail, format!("restricts libfabric to {v} on a node with {} EFA device(s): NCCL will not use EFA", ctx.efa_devices))
                .with_hint("unset FI_PROVIDER (aws-ofi-nccl selects efa itself) or set FI_PROVIDER=efa"),
        ];
    }
    // The environment asks for EFA and there is none: what NCCL does next is TCP (the plugin
    // finds no provider, or there is no plugin), and `run` calls that a fallback.
    if ctx.efa_devices == 0 && names == ["efa"] {
        let next = if ctx.ofi_plugin {
            "aws-ofi-nccl will find no provider and NCCL will fall back to TCP sockets"
        } else {
            "no aws-ofi-nccl plugin is found either, so NCCL will use TCP sockets"
        };
        return vec![
            finding("FI_PROVIDER", v, Check::fail, format!("asks for efa, but this host has no EFA device: {next}"))
                .with_hint("run on a node with EFA (the pod requests vpc.amazonaws.com/efa, the EFA device plugin runs there), or unset FI_PROVIDER where TCP is meant"),
        ];
    }
    Vec::new()
}

/// aws-ofi-nccl where libfabric offers only TCP providers: NCCL reports `Using network
/// Libfabric`, and the traffic is TCP inside libfabric (aws-ofi-nccl logs `Selected provider
/// is tcp`). `run` counts it as a fallback.
fn ofi_on_tcp(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let Some(providers) = ctx.ofi_on_tcp_only() else {
        return Vec::new();
    };
    let shown = env
        .get("FI_PROVIDER")
        .cloned()
        .unwrap_or_else(|| "(unset)".into());
    let udp = |p: &&str| p.to_ascii_lowercase().starts_with("udp");
    let protocol = if providers.iter().all(udp) {
        "UDP"
    } else if providers.iter().any(udp) {
        "TCP or UDP"
    } else {
        "TCP"
    };
    vec![
        finding("FI_PROVIDER", &shown, Check::fail, format!(
            "aws-ofi-nccl will run on libfabric's {} provider here (no EFA device): NCCL will say `Libfabric`, and its traffic is {protocol}",
            providers.join(", ")
        ))
        .with_hint("run on a node with EFA, or remove the plugin (or set NCCL_NET=Socket) where TCP is meant"),
    ]
}

/// aws-ofi-nccl where FI_PROVIDER leaves libfabric no provider that reaches another host
/// (`shm`, `sm2`, or none at all): the plugin asks for remote communication (`FI_REMOTE_COMM`),
/// finds no eligible provider and fails to initialise, and NCCL falls back to TCP sockets
/// (measured: docs/ofi-matrix.md, `ofi-fi-shm`). FI_PROVIDER=efa on a host without EFA is
/// `fi_provider`'s.
fn ofi_no_provider(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("FI_PROVIDER") else {
        return Vec::new();
    };
    let Some(providers) = ctx.rdm_providers.as_deref() else {
        return Vec::new();
    };
    if !ctx.ofi_plugin
        || ctx.efa_devices > 0
        || v.trim() == "efa"
        || !providers.iter().all(|p| host_only(p))
    {
        return Vec::new();
    }
    let offered = if providers.is_empty() {
        "no provider".to_string()
    } else {
        format!("only {} (this host's processes only)", providers.join(", "))
    };
    vec![
        finding("FI_PROVIDER", v, Check::fail, format!(
            "leaves libfabric {offered}: aws-ofi-nccl needs a provider that reaches other hosts, will find none and fail to initialise, and NCCL will fall back to TCP sockets"
        ))
        .with_hint("unset FI_PROVIDER (aws-ofi-nccl selects efa itself) or set FI_PROVIDER=efa on EFA nodes"),
    ]
}

/// `NCCL_NET` pins a network that cannot initialise here: NCCL fails communicator init with
/// `Failed to initialize any NET plugin` (plugin/net.cc) instead of falling back.
fn pinned_network(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("NCCL_NET") else {
        return Vec::new();
    };
    let net = v.trim().to_ascii_lowercase();
    let why = if net.contains("libfabric") || net == "ofi" {
        if !ctx.ofi_plugin {
            Some("no aws-ofi-nccl plugin is found".to_string())
        } else if ctx.rdm_providers.as_ref().is_some_and(Vec::is_empty) {
            Some(format!(
                "libfabric offers the plugin no provider{}",
                env.get("FI_PROVIDER")
                    .map(|p| format!(" for FI_PROVIDER={p}"))
                    .unwrap_or_default()
            ))
        } else {
            None
        }
    } else if net == "ib" && ctx.ib_devices == 0 {
        Some("this host has no InfiniBand/RoCE device".into())
    } else {
        None
    };
    let Some(why) = why else { return Vec::new() };
    vec![
        finding("NCCL_NET", v, Check::fail, format!(
            "pins NCCL's network, but {why}: NCCL will fail communicator init (`Failed to initialize any NET plugin`)"
        ))
        .with_hint("run on a node with the device, or fix the plugin / FI_PROVIDER; unset NCCL_NET to let NCCL fall back (netcheck then reports the fallback)"),
    ]
}

fn forced_protocol_or_algorithm(env: &Env, _: &LintContext) -> Vec<Check> {
    let mut out = Vec::new();
    if let Some(v) = env.get("NCCL_PROTO") {
        out.push(
            finding("NCCL_PROTO", v, Check::warn, "forces NCCL's protocol choice; NCCL_PROTO=simple was only needed with aws-ofi-nccl <= 1.5.0 (newer plugins force Simple themselves when needed)".into())
                .with_hint("unset it: a forced protocol costs latency (LL/LL128) or bandwidth depending on message size"),
        );
    }
    if let Some(v) = env.get("NCCL_ALGO") {
        out.push(
            finding(
                "NCCL_ALGO",
                v,
                Check::warn,
                "forces NCCL's algorithm choice (ring/tree/NVLS/...) for every size".into(),
            )
            .with_hint("unset it unless you are benchmarking one algorithm on purpose"),
        );
    }
    out
}

/// NCCL_SOCKET_IFNAME: comma-separated prefixes; `^` excludes, `=` matches exactly.
pub fn socket_ifname_matches(spec: &str, interfaces: &[String]) -> Vec<String> {
    let (exclude, rest) = match spec.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, spec),
    };
    let (exact, rest) = match rest.strip_prefix('=') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let patterns: Vec<&str> = rest
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let hit = |iface: &str| {
        patterns.iter().any(|p| {
            if exact {
                iface == *p
            } else {
                iface.starts_with(p)
            }
        })
    };
    interfaces
        .iter()
        .filter(|i| hit(i) != exclude)
        .cloned()
        .collect()
}

fn socket_ifname(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("NCCL_SOCKET_IFNAME") else {
        return Vec::new();
    };
    if ctx.interfaces.is_empty() {
        return Vec::new(); // cannot judge without the interface list
    }
    let chosen = socket_ifname_matches(v, &ctx.interfaces);
    let available = format!("interfaces here: {}", ctx.interfaces.join(", "));
    if chosen.is_empty() {
        return vec![
            finding("NCCL_SOCKET_IFNAME", v, Check::fail, "matches no interface on this host: NCCL cannot bootstrap (and reports it poorly)".into())
                .with_evidence([available])
                .with_hint("use a prefix of a real interface (e.g. eth, ens, en), `^docker,lo` to exclude, or `=eth0` for an exact name"),
        ];
    }
    let local_only = chosen.iter().all(|i| {
        i == "lo" || i.starts_with("docker") || i.starts_with("veth") || i.starts_with("virbr")
    });
    if local_only {
        return vec![
            finding("NCCL_SOCKET_IFNAME", v, Check::warn, format!("selects only {} (loopback or container bridges): other nodes cannot reach these", chosen.join(", ")))
                .with_evidence([available])
                .with_hint("point it at the interface that carries traffic between nodes"),
        ];
    }
    Vec::new()
}

fn nvls(env: &Env, _: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("NCCL_NVLS_ENABLE") else {
        return Vec::new();
    };
    match v.trim() {
        "0" => vec![
            finding("NCCL_NVLS_ENABLE", v, Check::warn, "NVLink SHARP (NVLS) is off: right on hosts without NVLink multicast (some VMs), but on NVSwitch systems it lowers all-reduce bandwidth".into())
                .with_hint("keep it only where NVLS fails (no fabric manager / multicast); leave it unset on bare-metal NVSwitch nodes"),
        ],
        "1" | "2" => Vec::new(),
        _ => vec![finding("NCCL_NVLS_ENABLE", v, Check::warn, "is not 0, 1 or 2".into())],
    }
}

fn transports_disabled(env: &Env, ctx: &LintContext) -> Vec<Check> {
    let on = |k: &str| env.get(k).is_some_and(|v| v.trim() == "1");
    let mut out = Vec::new();
    if on("NCCL_P2P_DISABLE") {
        out.push(
            finding("NCCL_P2P_DISABLE", &env["NCCL_P2P_DISABLE"], Check::warn, "GPUs on this node will not talk over NVLink/PCIe peer-to-peer; traffic goes through host memory, many times slower".into())
                .with_hint("a debugging switch: remove it for real runs"),
        );
    }
    if on("NCCL_SHM_DISABLE") {
        out.push(
            finding("NCCL_SHM_DISABLE", &env["NCCL_SHM_DISABLE"], Check::warn, "NCCL's shared-memory transport is off; with P2P also off, GPUs of one node talk over the network".into())
                .with_hint("a debugging switch: remove it for real runs"),
        );
    }
    if on("NCCL_IB_DISABLE") && ctx.ib_devices > 0 {
        out.push(
            finding("NCCL_IB_DISABLE", &env["NCCL_IB_DISABLE"], Check::warn, format!("NCCL will not use the {} InfiniBand/RoCE device(s) here and sends over TCP sockets", ctx.ib_devices))
                .with_hint("remove it unless the IB fabric is known bad"),
        );
    }
    if let Some(v) = env.get("NCCL_NET")
        && v.trim().eq_ignore_ascii_case("socket")
        && ctx.efa_devices + ctx.ib_devices > 0
    {
        out.push(
            finding("NCCL_NET", v, Check::warn, "forces NCCL's TCP socket transport although RDMA devices are present".into())
                .with_hint("unset it (or, to make a missing plugin fail loudly on EFA, set NCCL_NET=\"AWS Libfabric\" or the name your plugin registers)"),
        );
    }
    out
}

fn topo_file(env: &Env, _: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("NCCL_TOPO_FILE") else {
        return Vec::new();
    };
    if std::path::Path::new(v).exists() {
        return Vec::new();
    }
    vec![
        finding("NCCL_TOPO_FILE", v, Check::warn, "points to a file that does not exist".into())
            .with_hint("fix the path or unset it (aws-ofi-nccl sets a topology file itself on known platforms)"),
    ]
}

fn cuda_visible_devices(env: &Env, _: &LintContext) -> Vec<Check> {
    let Some(v) = env.get("CUDA_VISIBLE_DEVICES") else {
        return Vec::new();
    };
    let t = v.trim();
    if t.is_empty() || t == "-1" || t.eq_ignore_ascii_case("NoDevFiles") {
        return vec![
            finding(
                "CUDA_VISIBLE_DEVICES",
                v,
                Check::warn,
                "hides every GPU from CUDA programs".into(),
            )
            .with_hint("unset it, or list the GPUs to use (e.g. 0,1)"),
        ];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::check::Status;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn ifaces() -> Vec<String> {
        ["lo", "eth0", "docker0", "ens5"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn efa_node() -> LintContext {
        LintContext {
            efa_devices: 4,
            interfaces: ifaces(),
            ..Default::default()
        }
    }

    fn ids(checks: &[Check]) -> Vec<(String, Status)> {
        checks.iter().map(|c| (c.id.clone(), c.status)).collect()
    }

    #[test]
    fn a_clean_environment_gives_one_ok_check_listing_what_was_seen() {
        let checks = lint(
            &env(&[
                ("NCCL_DEBUG", "INFO"),
                ("HOME", "/root"),
                ("FI_PROVIDER", "efa"),
            ]),
            &efa_node(),
        );
        assert_eq!(ids(&checks), vec![("env".to_string(), Status::Ok)]);
        assert_eq!(
            checks[0].evidence,
            vec!["FI_PROVIDER=efa", "NCCL_DEBUG=INFO"]
        );
    }

    #[test]
    fn obsolete_and_harmful_efa_variables_warn() {
        let checks = lint(
            &env(&[
                ("FI_EFA_USE_DEVICE_RDMA", "1"),
                ("FI_EFA_FORK_SAFE", "1"),
                ("RDMAV_FORK_SAFE", "1"),
                ("NCCL_PROTO", "simple"),
                ("NCCL_ALGO", "Ring"),
            ]),
            &efa_node(),
        );
        let got = ids(&checks);
        for id in [
            "env.FI_EFA_USE_DEVICE_RDMA",
            "env.FI_EFA_FORK_SAFE",
            "env.RDMAV_FORK_SAFE",
            "env.NCCL_PROTO",
            "env.NCCL_ALGO",
        ] {
            assert!(
                got.contains(&(id.to_string(), Status::Warn)),
                "{id} in {got:?}"
            );
        }
        assert!(
            checks
                .iter()
                .all(|c| c.hint.is_some() && !c.evidence.is_empty())
        );
    }

    #[test]
    fn fi_provider_against_the_hardware() {
        assert_eq!(
            ids(&lint(&env(&[("FI_PROVIDER", "tcp")]), &efa_node()))[0],
            ("env.FI_PROVIDER".into(), Status::Fail)
        );
        let no_efa = LintContext {
            interfaces: ifaces(),
            ..Default::default()
        };
        assert_eq!(
            ids(&lint(&env(&[("FI_PROVIDER", "efa")]), &no_efa))[0],
            ("env.FI_PROVIDER".into(), Status::Fail)
        );
        assert_eq!(
            ids(&lint(&env(&[("FI_PROVIDER", "tcp")]), &no_efa))[0].0,
            "env"
        );
    }

    /// The aws-ofi-nccl matrix on the GPU host (docs/ofi-matrix.md): what doctor says in
    /// each environment agrees with what NCCL did next.
    #[test]
    fn the_ofi_plugin_without_efa_as_nccl_then_behaves() {
        let host = |providers: &[&str]| LintContext {
            interfaces: ifaces(),
            ofi_plugin: true,
            rdm_providers: Some(providers.iter().map(|p| p.to_string()).collect()),
            ..Default::default()
        };
        // FI_PROVIDER=tcp or unset: the plugin runs on tcp (`Using network Libfabric`).
        let checks = lint(
            &env(&[("FI_PROVIDER", "tcp")]),
            &host(&["tcp", "tcp;ofi_rxm"]),
        );
        assert_eq!(ids(&checks), vec![("env.FI_PROVIDER".into(), Status::Fail)]);
        assert!(
            checks[0].summary.contains("tcp, tcp;ofi_rxm"),
            "{}",
            checks[0].summary
        );
        // Unset, as the matrix's host listed them: shm and sm2 do not leave the host.
        let all = ["tcp", "tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sockets", "sm2"];
        let unset = lint(&env(&[]), &host(&all));
        assert_eq!(ids(&unset), vec![("env.FI_PROVIDER".into(), Status::Fail)]);
        assert!(!unset[0].summary.contains("shm"), "{}", unset[0].summary);
        // FI_PROVIDER=shm: the plugin finds no provider that reaches another host and fails,
        // and NCCL runs Socket (the matrix's `ofi-fi-shm`: run exit 1).
        let shm = lint(&env(&[("FI_PROVIDER", "shm")]), &host(&["shm"]));
        assert_eq!(ids(&shm), vec![("env.FI_PROVIDER".into(), Status::Fail)]);
        assert!(shm[0].summary.contains("only shm"), "{}", shm[0].summary);
        let nothing = lint(&env(&[("FI_PROVIDER", "verbs")]), &host(&[]));
        assert_eq!(
            ids(&nothing),
            vec![("env.FI_PROVIDER".into(), Status::Fail)]
        );
        // FI_PROVIDER=udp: the plugin runs on udp;ofi_rxd, whose traffic is UDP.
        let udp = lint(&env(&[("FI_PROVIDER", "udp")]), &host(&["udp;ofi_rxd"]));
        assert_eq!(ids(&udp), vec![("env.FI_PROVIDER".into(), Status::Fail)]);
        assert!(
            udp[0].summary.ends_with("traffic is UDP"),
            "{}",
            udp[0].summary
        );
        // NCCL_NET pinned to the plugin with no provider: init fails.
        let pinned = lint(
            &env(&[("NCCL_NET", "AWS Libfabric"), ("FI_PROVIDER", "efa")]),
            &host(&[]),
        );
        assert!(
            ids(&pinned).contains(&("env.NCCL_NET".into(), Status::Fail)),
            "{pinned:?}"
        );
        // Pinned with a tcp provider: it initialises (on TCP), no init failure predicted.
        let tcp = lint(&env(&[("NCCL_NET", "Libfabric")]), &host(&["tcp"]));
        assert!(
            !ids(&tcp).iter().any(|(id, _)| id == "env.NCCL_NET"),
            "{tcp:?}"
        );
        // Pinned without any plugin, and IB pinned without IB devices.
        let none = LintContext {
            interfaces: ifaces(),
            ..Default::default()
        };
        assert!(
            ids(&lint(&env(&[("NCCL_NET", "Libfabric")]), &none))
                .contains(&("env.NCCL_NET".into(), Status::Fail))
        );
        assert!(
            ids(&lint(&env(&[("NCCL_NET", "IB")]), &none))
                .contains(&("env.NCCL_NET".into(), Status::Fail))
        );
        // On an EFA node, the efa provider: nothing to say.
        let efa = LintContext {
            efa_devices: 4,
            ofi_plugin: true,
            rdm_providers: Some(vec!["efa".into()]),
            interfaces: ifaces(),
            ..Default::default()
        };
        assert_eq!(
            ids(&lint(&env(&[("FI_PROVIDER", "efa")]), &efa)),
            vec![("env".into(), Status::Ok)]
        );
    }

    #[test]
    fn socket_ifname_syntax() {
        let i = ifaces();
        assert_eq!(socket_ifname_matches("eth", &i), vec!["eth0"]);
        assert_eq!(
            socket_ifname_matches("^docker,lo", &i),
            vec!["eth0", "ens5"]
        );
        assert_eq!(socket_ifname_matches("=eth", &i), Vec::<String>::new());
        assert_eq!(socket_ifname_matches("=eth0", &i), vec!["eth0"]);
        assert_eq!(
            socket_ifname_matches("^=lo", &i),
            vec!["eth0", "docker0", "ens5"]
        );
        assert_eq!(socket_ifname_matches("en,eth", &i), vec!["eth0", "ens5"]);
    }

    #[test]
    fn socket_ifname_matching_nothing_fails_and_loopback_only_warns() {
        let c = lint(&env(&[("NCCL_SOCKET_IFNAME", "ib")]), &efa_node());
        assert_eq!(ids(&c)[0], ("env.NCCL_SOCKET_IFNAME".into(), Status::Fail));
        assert!(c[0].evidence.iter().any(|e| e.contains("eth0")));
        let c = lint(&env(&[("NCCL_SOCKET_IFNAME", "lo,docker")]), &efa_node());
        assert_eq!(ids(&c)[0], ("env.NCCL_SOCKET_IFNAME".into(), Status::Warn));
        assert_eq!(
            ids(&lint(
                &env(&[("NCCL_SOCKET_IFNAME", "^docker,lo")]),
                &efa_node()
            ))[0]
                .0,
            "env"
        );
    }

    #[test]
    fn disabled_transports_and_forced_sockets() {
        let ib_node = LintContext {
            ib_devices: 2,
            interfaces: ifaces(),
            ..Default::default()
        };
        let got = ids(&lint(
            &env(&[
                ("NCCL_P2P_DISABLE", "1"),
                ("NCCL_SHM_DISABLE", "1"),
                ("NCCL_IB_DISABLE", "1"),
                ("NCCL_NET", "Socket"),
            ]),
            &ib_node,
        ));
        for id in [
            "env.NCCL_P2P_DISABLE",
            "env.NCCL_SHM_DISABLE",
            "env.NCCL_IB_DISABLE",
            "env.NCCL_NET",
        ] {
            assert!(
                got.contains(&(id.to_string(), Status::Warn)),
                "{id} in {got:?}"
            );
        }
        // Without IB devices, NCCL_IB_DISABLE changes nothing.
        let got = ids(&lint(&env(&[("NCCL_IB_DISABLE", "1")]), &efa_node()));
        assert_eq!(got[0].0, "env");
    }

    #[test]
    fn nvls_topo_file_and_hidden_gpus() {
        let got = ids(&lint(
            &env(&[
                ("NCCL_NVLS_ENABLE", "0"),
                ("NCCL_TOPO_FILE", "/nonexistent/topo.xml"),
                ("CUDA_VISIBLE_DEVICES", ""),
            ]),
            &efa_node(),
        ));
        for id in [
            "env.NCCL_NVLS_ENABLE",
            "env.NCCL_TOPO_FILE",
            "env.CUDA_VISIBLE_DEVICES",
        ] {
            assert!(
                got.contains(&(id.to_string(), Status::Warn)),
                "{id} in {got:?}"
            );
        }
        assert_eq!(
            ids(&lint(
                &env(&[("NCCL_NVLS_ENABLE", "1"), ("CUDA_VISIBLE_DEVICES", "0,1")]),
                &efa_node()
            ))[0]
                .0,
            "env"
        );
    }
}
