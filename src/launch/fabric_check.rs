//! `netcheck run --fabric-check PROVIDER`: before NCCL starts, every other node runs a short
//! libfabric RDM ping-pong against node 0. A node whose fabric is unusable (provider missing,
//! port or security group closed, payloads corrupted) then fails the run by name within
//! seconds, instead of NCCL hanging in init or quietly falling back to TCP sockets.
//!
//! Node 0 listens on the rendezvous port + 1 and serves the other nodes one after the other (so
//! each measurement has the link to itself); every other node connects there and drives, that
//! is measures. The handshake carries the run token (`NETCHECK_RDZV_TOKEN`). Each driver prints
//! its report as one stdout line `NETCHECK_FABRIC <json>` for `launch` to collect; node 0 keeps
//! whom it served in its RunRecord.

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::fabric::Libfabric;
use crate::fabric::endpoint::Selection;
use crate::fabric::pingpong::Plan;
use crate::fabric::report::FabricReport;
use crate::fabric::session::{self, Driver, Options, accept_within};

/// The line a non-zero node prints with its report (`netcheck.fabric.v1` JSON).
pub const FABRIC_PREFIX: &str = "NETCHECK_FABRIC ";

/// One node's part of the check.
#[derive(Debug, Clone)]
pub struct FabricCheck {
    /// libfabric provider, e.g. `efa` or `tcp`.
    pub provider: String,
    pub nnodes: u32,
    pub node_rank: u32,
    /// Node 0's `HOST:PORT` (the NCCL rendezvous); the check uses PORT + 1.
    pub rendezvous: String,
    /// The run token; a driver without it is refused.
    pub token: String,
    /// How long to wait at each step: a peer connecting, a reply, a completion.
    pub timeout: Duration,
}

/// What the check did on this node.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per run
pub enum Checked {
    /// Node 0: the nodes it served (the numbers are theirs: only the driver times anything).
    Served(Served),
    /// Any other node: its measurement against node 0.
    Measured(FabricReport),
}

/// Node 0's record of the check (`RunRecord.fabric` of a multi-node `netcheck run`).
#[derive(Debug, Clone, Serialize)]
pub struct Served {
    /// `responder`: node 0 echoes, the other nodes measure.
    pub role: String,
    pub provider: String,
    pub listen: String,
    pub plan: Plan,
    pub peers: Vec<ServedPeer>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServedPeer {
    /// The driver's own host name (in a pod: the pod's name).
    pub host: String,
    /// Where its TCP handshake came from.
    pub address: String,
}

/// A small fixed plan: a pre-check of a few seconds even over TCP, not a benchmark (that is
/// `netcheck fabric --server/--connect`). Small messages for latency, 1 MiB for bandwidth, and
/// every size's payload checked.
pub fn plan() -> Plan {
    Plan {
        sizes: vec![8, 4 << 10, 64 << 10, 1 << 20],
        iters: 100,
        warmup: 10,
        window: 16,
        batches: 4,
    }
}

/// Where node 0 listens for the check: the rendezvous host, port + 1.
pub fn address(rendezvous: &str) -> Result<(String, u16)> {
    let not_host_port = || {
        Error::usage(format!(
            "--rendezvous `{rendezvous}` is not HOST:PORT (the fabric check uses PORT + 1)"
        ))
    };
    let (host, port) = rendezvous.rsplit_once(':').ok_or_else(not_host_port)?;
    let port: u16 = port.parse().map_err(|_| not_host_port())?;
    let fabric_port = port.checked_add(1).ok_or_else(|| {
        Error::usage(format!(
            "--rendezvous port {port} leaves no room for the fabric check on port + 1; pick a lower port"
        ))
    })?;
    Ok((host.to_string(), fabric_port))
}

/// Runs this node's part: node 0 serves `nnodes - 1` drivers, the others drive against it.
/// Errors name the node and the provider and keep their exit codes (3: libfabric or the
/// provider missing, 124: a peer that never came or went silent, 4: the fabric failed).
pub fn run(check: &FabricCheck) -> Result<Checked> {
    let in_context = |e: Error| on_node(e, check.node_rank, &check.provider);
    let lib = Arc::new(Libfabric::load().map_err(in_context)?);
    let opts = Options {
        selection: Selection {
            provider: Some(check.provider.clone()),
            domain: None,
        },
        plan: plan(),
        timeout: check.timeout,
        token: Some(check.token.clone()),
    };
    // A missing provider (or one that cannot carry the plan's sizes) fails here, on every
    // node, before anyone waits for a peer.
    let driver = Driver::open(lib.clone(), &opts).map_err(in_context)?;
    let (host, port) = address(&check.rendezvous)?;
    if check.node_rank == 0 {
        drop(driver);
        serve(lib, check, &opts, port)
            .map(Checked::Served)
            .map_err(in_context)
    } else {
        let target = format!("{host}:{port}");
        crate::say!(
            "netcheck: fabric check ({}): measuring against node 0 at {target}",
            check.provider
        );
        let stream = connect(&target, check.timeout).map_err(in_context)?;
        driver
            .run(stream, "remote", &target)
            .map(Checked::Measured)
            .map_err(in_context)
    }
}

impl Checked {
    /// What goes into `RunRecord.fabric`.
    pub fn to_record(&self) -> serde_json::Value {
        match self {
            Checked::Served(s) => serde_json::to_value(s),
            Checked::Measured(r) => serde_json::to_value(r),
        }
        .expect("fabric results serialize")
    }

    /// Why the check failed although it ran to the end (payloads came back wrong).
    pub fn failure(&self, check: &FabricCheck) -> Option<String> {
        match self {
            Checked::Measured(r) if !r.passed() => Some(format!(
                "fabric check on node {} (provider {}): payloads came back wrong from node 0; the fabric or the provider corrupts or reorders data",
                check.node_rank, check.provider
            )),
            _ => None,
        }
    }
}

fn serve(lib: Arc<Libfabric>, check: &FabricCheck, opts: &Options, port: u16) -> Result<Served> {
    let bind = SocketAddr::from(([0, 0, 0, 0], port));
    let listener = TcpListener::bind(bind).map_err(|e| Error::Infrastructure {
        what: format!("cannot listen on {bind}: {e}"),
        hint: Some("the fabric check uses the rendezvous port + 1: free it, or pick another --rendezvous port".into()),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::infra(format!("listener on {bind}: {e}")))?;
    let wanted = check.nnodes as usize - 1;
    crate::say!(
        "netcheck: fabric check ({}): waiting on {bind} for {wanted} node(s)",
        check.provider
    );
    let mut peers = Vec::new();
    while peers.len() < wanted {
        let (stream, from) = accept_within(&listener, check.timeout).map_err(|e| match e {
            Error::Timeout { .. } => Error::Timeout {
                what: format!(
                    "{} of {wanted} node(s) came for the fabric check within {:?}",
                    peers.len(),
                    check.timeout
                ),
                hint: Some(format!(
                    "the missing nodes say why in their own output; every node needs --fabric-check {} and must reach port {port} here",
                    check.provider
                )),
            },
            other => other,
        })?;
        match session::respond(lib.clone(), stream, opts) {
            Ok(served) => {
                crate::say!(
                    "netcheck: fabric check ({}): served {} ({from})",
                    check.provider,
                    served.driver_host
                );
                peers.push(ServedPeer {
                    host: served.driver_host,
                    address: from.to_string(),
                });
            }
            // A connection that is not one of this run's nodes (wrong token or protocol) was
            // refused; the real nodes may still come.
            Err(e) if e.exit_code() == crate::exit::BAD_INPUT => {
                crate::say!("netcheck: warning: fabric check: {e}");
            }
            Err(e) => {
                return Err(prefix(e, &format!("serving the node at {from}")));
            }
        }
    }
    Ok(Served {
        role: "responder".into(),
        provider: check.provider.clone(),
        listen: bind.to_string(),
        plan: opts.plan.clone(),
        peers,
    })
}

/// Connects to node 0, retrying until `timeout` while it is not up yet, and while its name
/// does not resolve yet (a pod's DNS record appears only once the pod has an address).
fn connect(target: &str, timeout: Duration) -> Result<TcpStream> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match target.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = format!("`{target}` resolves to no address");
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(2).min(timeout)) {
                        Ok(s) => return Ok(s),
                        Err(e) => last = format!("{a}: {e}"),
                    }
                }
                last
            }
            Err(e) => format!("cannot resolve `{target}`: {e}"),
        };
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: format!("cannot reach node 0 at {target} ({last})"),
                hint: Some(
                    "node 0 listens on the rendezvous port + 1 once it starts: check that it runs with the same --fabric-check and that the port is reachable".into(),
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The error, said to be about this node's fabric check with this provider.
fn on_node(e: Error, node: u32, provider: &str) -> Error {
    prefix(
        e,
        &format!("fabric check on node {node} (provider {provider})"),
    )
}

/// The same error (same exit code and hint), its message prefixed.
fn prefix(e: Error, context: &str) -> Error {
    match e {
        Error::Usage { message, hint } => Error::Usage {
            message: format!("{context}: {message}"),
            hint,
        },
        Error::BadInput {
            what,
            message,
            hint,
        } => Error::BadInput {
            what: format!("{context}: {what}"),
            message,
            hint,
        },
        Error::MissingEnvironment { what, hint } => Error::MissingEnvironment {
            what: format!("{context}: {what}"),
            hint,
        },
        Error::Infrastructure { what, hint } => Error::Infrastructure {
            what: format!("{context}: {what}"),
            hint,
        },
        Error::Timeout { what, hint } => Error::Timeout {
            what: format!("{context}: {what}"),
            hint,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_listens_on_the_rendezvous_port_plus_one() {
        assert_eq!(
            address("job-0.job.ns.svc:29400").unwrap(),
            ("job-0.job.ns.svc".to_string(), 29401)
        );
        assert_eq!(address("[::1]:80").unwrap(), ("[::1]".to_string(), 81));
        for bad in ["nohost", "h:x", "h:65535"] {
            assert_eq!(
                address(bad).unwrap_err().exit_code(),
                crate::exit::BAD_INPUT,
                "{bad}"
            );
        }
    }

    #[test]
    fn the_plan_is_small_and_valid() {
        let p = plan();
        p.validate(u64::MAX).unwrap();
        // Bytes on the wire: echoed rounds both ways, plus the stream windows.
        let bytes: u64 = p
            .sizes
            .iter()
            .map(|s| {
                s * (p.iters + p.warmup + 1) as u64 * 2 + s * (p.window * (p.batches + 1)) as u64
            })
            .sum();
        // Under half a second at 1 GB/s (a slow TCP path), per node.
        assert!(bytes < 512 << 20, "{bytes} bytes is not a pre-check");
    }

    #[test]
    fn errors_keep_their_exit_code_and_hint_and_name_node_and_provider() {
        let e = on_node(
            Error::missing("no RDM endpoint", "check `netcheck fabric --list`"),
            2,
            "efa",
        );
        assert_eq!(e.exit_code(), crate::exit::MISSING_ENVIRONMENT);
        assert_eq!(
            e.to_string(),
            "fabric check on node 2 (provider efa): no RDM endpoint"
        );
        assert!(e.hint().unwrap().contains("--list"));
    }
}
