//! Two ranks and how they meet: a plain TCP connection carries the handshake (protocol, token,
//! provider, plan, endpoint addresses) and the final goodbye; everything measured goes over the
//! fabric. The side that measures and reports is the *driver*, the other the *responder*;
//! which side listens on TCP is independent of that:
//! - `--server` listens and responds, `--connect HOST:PORT` connects and drives (two nodes);
//! - `--local` listens and drives, and starts a second process that connects and responds.
//!
//! `drive` and `respond` take any connected `TcpStream`, so `launch` can run them between pods.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::endpoint::{EndpointInfo, RdmEndpoint, Selection};
use super::library::{Libfabric, LibraryInfo};
use super::pingpong::{self, Plan};
use super::report::{FabricReport, Side};
use super::transfer::Transfers;
use crate::error::{Error, Result};

pub const PROTOCOL: &str = "netcheck-fabric/1";
/// `--server`'s default port.
pub const DEFAULT_PORT: u16 = 18600;
/// Handshake frames are small; anything bigger is not a netcheck peer.
const MAX_FRAME: usize = 64 << 10;

/// What both roles need.
#[derive(Debug, Clone)]
pub struct Options {
    pub selection: Selection,
    pub plan: Plan,
    /// How long to wait for the peer at each step (connecting, a completion, a reply).
    pub timeout: Duration,
    /// A shared secret the driver must present (both sides set the same value).
    pub token: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Hello {
    protocol: String,
    token: Option<String>,
    host: String,
    libfabric: LibraryInfo,
    endpoint: EndpointInfo,
    addr_format: u32,
    address: Vec<u8>,
    plan: Plan,
}

#[derive(Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)] // two handshake messages per session
enum Reply {
    Ready {
        host: String,
        libfabric: LibraryInfo,
        endpoint: EndpointInfo,
        address: Vec<u8>,
    },
    /// `exit_code` is what the refusal means on the responder's side (2: a mismatch in how
    /// the two were started, 3: the provider is missing there), so the driver exits the same.
    Refused { reason: String, exit_code: u8 },
}

#[derive(Debug, Serialize, Deserialize)]
enum Closing {
    Done,
    Bye,
}

/// Connects to `addr` (HOST:PORT, or HOST for the default port), retrying while the server is
/// not up yet, then drives the measurement.
pub fn connect_and_drive(lib: Arc<Libfabric>, addr: &str, opts: &Options) -> Result<FabricReport> {
    let driver = Driver::open(lib, opts)?; // a missing provider fails before any connection
    let stream = connect(addr, opts.timeout)?;
    driver.run(stream, "remote", addr)
}

/// Listens on `bind`, waits up to `opts.timeout` for one driver (then `Error::Timeout`, exit
/// 124), serves it, and returns the plan it served (the numbers are the driver's: only it times
/// anything).
pub fn listen_and_respond(lib: Arc<Libfabric>, bind: SocketAddr, opts: &Options) -> Result<Plan> {
    let listener = TcpListener::bind(bind).map_err(|e| Error::Infrastructure {
        what: format!("cannot listen on {bind}: {e}"),
        hint: Some("pick another port with --bind HOST:PORT".into()),
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::infra(format!("listener address: {e}")))?;
    crate::say!(
        "netcheck fabric: listening on {local}; run `netcheck fabric --connect <this-host>:{}` on the peer",
        local.port()
    );
    let (stream, peer) = accept_within(&listener, opts.timeout).map_err(|e| match e {
        Error::Timeout { .. } => Error::Timeout {
            what: format!(
                "no driver connected to {local} within {:?}",
                opts.timeout
            ),
            hint: Some(
                "start `netcheck fabric --connect HOST:PORT` on the peer sooner, or give the server a longer --timeout (e.g. 10m)"
                    .into(),
            ),
        },
        other => other,
    })?;
    crate::say!("netcheck fabric: driver connected from {peer}");
    respond(lib, stream, opts).map(|served| served.plan)
}

/// Both ranks on this host: listens on loopback, starts `exe fabric --respond-to ...` as the
/// second rank, and drives.
pub fn local(lib: Arc<Libfabric>, exe: &Path, opts: &Options) -> Result<FabricReport> {
    let driver = Driver::open(lib, opts)?; // a missing provider fails before the second rank starts
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::infra(format!("cannot listen on loopback: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::infra(format!("listener address: {e}")))?;
    let mut child = spawn_responder(exe, addr, opts)?;
    let stderr = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            text
        })
    });
    let result = accept_child(&listener, &mut child, opts.timeout)
        .and_then(|stream| driver.run(stream, "local", &addr.to_string()));
    let status = wait_child(&mut child, opts.timeout);
    let child_err = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let child_err = child_err.trim();
    match (result, status) {
        (Ok(report), Some(s)) if s.success() => Ok(report),
        (Ok(_), status) => Err(Error::infra(format!(
            "the second rank ended badly ({}): {child_err}",
            status.map_or("killed after the timeout".into(), |s| s.to_string())
        ))),
        (Err(e), _) => {
            // The second rank's own words help (its side may have failed first).
            for line in child_err.lines() {
                crate::say!("second rank: {line}");
            }
            Err(e)
        }
    }
}

fn spawn_responder(exe: &Path, addr: SocketAddr, opts: &Options) -> Result<Child> {
    let mut cmd = Command::new(exe);
    cmd.args(["fabric", "--respond-to", &addr.to_string()])
        .args(["--timeout", &format!("{}ms", opts.timeout.as_millis())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(p) = &opts.selection.provider {
        cmd.args(["--provider", p]);
    }
    if let Some(d) = &opts.selection.domain {
        cmd.args(["--domain", d]);
    }
    if let Some(t) = &opts.token {
        cmd.env(TOKEN_ENV, t);
    }
    cmd.spawn().map_err(|e| {
        Error::infra(format!(
            "cannot start the second rank `{}`: {e}",
            exe.display()
        ))
    })
}

/// Environment variable carrying `--token` (so it does not show in `ps`).
pub const TOKEN_ENV: &str = "NETCHECK_FABRIC_TOKEN";

/// Accepts one connection, waiting at most `timeout` (`Error::Timeout` after it).
pub(crate) fn accept_within(
    listener: &TcpListener,
    timeout: Duration,
) -> Result<(TcpStream, SocketAddr)> {
    accept_until(listener, timeout, "nobody connected", 20, || None)
}

/// Accepts the local second rank's connection; stops early when that rank exits.
fn accept_child(listener: &TcpListener, child: &mut Child, timeout: Duration) -> Result<TcpStream> {
    let exited = || {
        child.try_wait().ok().flatten().map(|status| {
            Error::infra(format!(
                "the second rank exited ({status}) before connecting"
            ))
        })
    };
    accept_until(
        listener,
        timeout,
        "the second rank did not connect",
        5,
        exited,
    )
    .map(|(stream, _)| stream)
}

/// Polls `listener` every `poll_ms` until a connection comes, `give_up` says why not, or
/// `timeout` passes (`Error::Timeout` saying `waiting`).
fn accept_until(
    listener: &TcpListener,
    timeout: Duration,
    waiting: &str,
    poll_ms: u64,
    mut give_up: impl FnMut() -> Option<Error>,
) -> Result<(TcpStream, SocketAddr)> {
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::infra(format!("listener: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| Error::infra(format!("socket from {peer}: {e}")))?;
                return Ok((stream, peer));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::infra(format!("accept: {e}"))),
        }
        if let Some(e) = give_up() {
            return Err(e);
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: waiting.into(),
                hint: None,
            });
        }
        std::thread::sleep(Duration::from_millis(poll_ms));
    }
}

fn wait_child(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// TCP connect with retries until `timeout` (the server may still be starting).
pub fn connect(addr: &str, timeout: Duration) -> Result<TcpStream> {
    let target = if addr
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        addr.to_string()
    } else {
        format!("{addr}:{DEFAULT_PORT}")
    };
    let deadline = Instant::now() + timeout;
    loop {
        let resolved: Vec<SocketAddr> = target
            .to_socket_addrs()
            .map_err(|e| Error::usage(format!("cannot resolve `{target}`: {e}")))?
            .collect();
        let mut last = None;
        for a in &resolved {
            match TcpStream::connect_timeout(a, Duration::from_secs(2).min(timeout)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: format!("cannot connect to {target}: {}", last.map_or("no address".into(), |e| e.to_string())),
                hint: Some("start `netcheck fabric --server` on the peer first, and check that the port is open".into()),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The driver: opens an endpoint, sends the plan and its address, measures every size.
pub fn drive(
    lib: Arc<Libfabric>,
    stream: TcpStream,
    opts: &Options,
    mode: &str,
    peer_label: &str,
) -> Result<FabricReport> {
    Driver::open(lib, opts)?.run(stream, mode, peer_label)
}

/// The driver's endpoint, opened before any peer is involved so that a missing provider or a
/// size the provider cannot carry is reported as such.
pub struct Driver {
    lib: Arc<Libfabric>,
    ep: RdmEndpoint,
    opts: Options,
}

impl Driver {
    pub fn open(lib: Arc<Libfabric>, opts: &Options) -> Result<Driver> {
        let ep = RdmEndpoint::open(lib.clone(), &opts.selection, opts.plan.max_in_flight() + 16)?;
        opts.plan.validate(ep.info_summary.max_msg_size)?;
        Ok(Driver {
            lib,
            ep,
            opts: opts.clone(),
        })
    }

    pub fn run(self, stream: TcpStream, mode: &str, peer_label: &str) -> Result<FabricReport> {
        let Driver { lib, mut ep, opts } = self;
        let started_at = chrono::Utc::now().to_rfc3339();
        let host = crate::host::hostname();
        let hello = Hello {
            protocol: PROTOCOL.into(),
            token: opts.token.clone(),
            host: host.clone(),
            libfabric: lib.info(),
            endpoint: ep.info_summary.clone(),
            addr_format: ep.addr_format,
            address: ep.name()?,
            plan: opts.plan.clone(),
        };
        write_frame(&stream, &hello)?;
        stream.set_read_timeout(Some(opts.timeout)).ok();
        let (peer_host, peer_lib, peer_ep, peer_addr) = match read_frame::<Reply>(&stream, None)? {
            Reply::Ready {
                host,
                libfabric,
                endpoint,
                address,
            } => (host, libfabric, endpoint, address),
            Reply::Refused { reason, exit_code } => return Err(refused(reason, exit_code)),
        };
        let peer = ep.insert_peer(&peer_addr)?;

        let mut t = Transfers::new(
            &ep,
            peer,
            opts.plan.max_in_flight(),
            opts.timeout,
            Some(&stream),
        );
        let mut results = Vec::new();
        for &size in &opts.plan.sizes {
            results.push(pingpong::drive_size(&mut t, &opts.plan, size as usize)?);
        }
        write_frame(&stream, &Closing::Done)?;
        match read_frame::<Closing>(&stream, Some(&mut || t.poll_once().map(drop)))? {
            Closing::Bye => {}
            other => return Err(Error::infra(format!("unexpected {other:?} from the peer"))),
        }
        drop(t);

        Ok(FabricReport::new(
            mode,
            started_at,
            Side {
                host,
                libfabric: lib.info(),
                endpoint: ep.info_summary.clone(),
                address: None,
            },
            Side {
                host: peer_host,
                libfabric: peer_lib,
                endpoint: peer_ep,
                address: Some(peer_label.to_string()),
            },
            opts.plan.clone(),
            results,
        ))
    }
}

/// What a responder served: the driver's plan, and the driver's own name for its host.
#[derive(Debug, Clone)]
pub struct Served {
    pub plan: Plan,
    pub driver_host: String,
}

/// The responder: reads the plan, opens an endpoint on the driver's provider, echoes and
/// absorbs until the driver says it is done.
pub fn respond(lib: Arc<Libfabric>, stream: TcpStream, opts: &Options) -> Result<Served> {
    stream.set_read_timeout(Some(opts.timeout)).ok();
    let hello: Hello = read_frame(&stream, None)?;
    let refuse = |reason: String, exit_code: u8| {
        let _ = write_frame(
            &stream,
            &Reply::Refused {
                reason: reason.clone(),
                exit_code,
            },
        );
        reason
    };
    if let Some(reason) = refusal(&hello, opts) {
        let reason = refuse(reason, crate::exit::BAD_INPUT);
        return Err(Error::usage(format!(
            "refused the driver from {}: {reason}",
            hello.host
        )));
    }
    // The driver picked the provider (and maybe a domain on its side); use the same provider.
    let selection = Selection {
        provider: Some(hello.endpoint.provider.clone()),
        domain: opts.selection.domain.clone(),
    };
    let mut ep = RdmEndpoint::open(lib.clone(), &selection, hello.plan.max_in_flight() + 16)
        .inspect_err(|e| {
            refuse(e.to_string(), e.exit_code());
        })?;
    if ep.addr_format != hello.addr_format {
        let reason = refuse(
            format!(
                "address formats differ ({} here, {} on the driver)",
                ep.info_summary.addr_format, hello.endpoint.addr_format
            ),
            crate::exit::INFRASTRUCTURE,
        );
        return Err(Error::infra(reason));
    }
    let peer = ep.insert_peer(&hello.address)?;
    let ready = Reply::Ready {
        host: crate::host::hostname(),
        libfabric: lib.info(),
        endpoint: ep.info_summary.clone(),
        address: ep.name()?,
    };
    write_frame(&stream, &ready)?;

    let mut t = Transfers::new(
        &ep,
        peer,
        hello.plan.max_in_flight(),
        opts.timeout,
        Some(&stream),
    );
    for &size in &hello.plan.sizes {
        pingpong::respond_size(&mut t, &hello.plan, size as usize)?;
    }
    match read_frame::<Closing>(&stream, Some(&mut || t.poll_once().map(drop)))? {
        Closing::Done => write_frame(&stream, &Closing::Bye)?,
        other => {
            return Err(Error::infra(format!(
                "unexpected {other:?} from the driver"
            )));
        }
    }
    Ok(Served {
        plan: hello.plan,
        driver_host: hello.host,
    })
}

fn refused(reason: String, exit_code: u8) -> Error {
    let what = format!("the peer refused: {reason}");
    match exit_code {
        crate::exit::BAD_INPUT => Error::Usage {
            message: what,
            hint: Some("start both sides with the same --provider and --token".into()),
        },
        crate::exit::MISSING_ENVIRONMENT => Error::missing(
            what,
            "install or enable the provider on the peer (check `netcheck fabric --list` there)",
        ),
        _ => Error::infra(what),
    }
}

fn refusal(hello: &Hello, opts: &Options) -> Option<String> {
    if hello.protocol != PROTOCOL {
        return Some(format!(
            "protocol {} (this side speaks {PROTOCOL})",
            hello.protocol
        ));
    }
    if opts.token.is_some() && hello.token != opts.token {
        return Some("wrong or missing token".into());
    }
    if let Some(wanted) = &opts.selection.provider
        && !provider_matches(wanted, &hello.endpoint.provider)
    {
        return Some(format!(
            "this side is limited to provider {wanted}, the driver uses {}",
            hello.endpoint.provider
        ));
    }
    None
}

/// `tcp` matches `tcp;ofi_rxm` the way libfabric's provider filter does (core provider name).
pub fn provider_matches(wanted: &str, actual: &str) -> bool {
    wanted == actual || actual.split(';').any(|p| p == wanted)
}

fn write_frame<T: Serialize>(mut stream: &TcpStream, msg: &T) -> Result<()> {
    let body = serde_json::to_vec(msg)
        .map_err(|e| Error::infra(format!("encoding a handshake message: {e}")))?;
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream
        .write_all(&frame)
        .map_err(|e| Error::infra(format!("sending to the peer: {e}")))
}

/// Reads one frame. With `progress`, waits in short slices and calls it in between, so the
/// fabric keeps moving while we wait on TCP (tcp;ofi_rxm needs both sides polled).
fn read_frame<T: DeserializeOwned>(
    mut stream: &TcpStream,
    mut progress: Option<&mut dyn FnMut() -> Result<()>>,
) -> Result<T> {
    let overall = stream
        .read_timeout()
        .ok()
        .flatten()
        .unwrap_or(Duration::from_secs(60));
    if progress.is_some() {
        stream.set_read_timeout(Some(Duration::from_millis(1))).ok();
    }
    let deadline = Instant::now() + overall;
    // Read exactly one frame (never past it): the length, then the body.
    let mut buf = vec![0u8; 4];
    let mut filled = 0;
    let result = loop {
        if filled == buf.len() {
            if buf.len() == 4 {
                let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if len > MAX_FRAME {
                    break Err(Error::infra(format!(
                        "the peer sent a {len}-byte frame; it is not a netcheck fabric peer"
                    )));
                }
                buf.resize(4 + len, 0);
            }
            if filled == buf.len() {
                break serde_json::from_slice(&buf[4..]).map_err(|e| {
                    Error::infra(format!(
                        "the peer sent something that is not a {PROTOCOL} message: {e}"
                    ))
                });
            }
        }
        match stream.read(&mut buf[filled..]) {
            Ok(0) => {
                break Err(Error::infra(
                    "the peer closed the connection during the handshake",
                ));
            }
            Ok(n) => filled += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() > deadline {
                    break Err(Error::Timeout {
                        what: "waiting for the peer's reply".into(),
                        hint: None,
                    });
                }
                if let Some(p) = progress.as_mut()
                    && let Err(e) = p()
                {
                    break Err(e);
                }
            }
            Err(e) => break Err(Error::infra(format!("reading from the peer: {e}"))),
        }
    };
    stream.set_read_timeout(Some(overall)).ok();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_provider_names_match_layered_providers() {
        assert!(provider_matches("tcp", "tcp;ofi_rxm"));
        assert!(provider_matches("tcp;ofi_rxm", "tcp;ofi_rxm"));
        assert!(provider_matches("efa", "efa"));
        assert!(!provider_matches("efa", "tcp;ofi_rxm"));
        assert!(!provider_matches("tc", "tcp;ofi_rxm"));
    }

    #[test]
    fn frames_round_trip_and_oversized_frames_are_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            write_frame(&s, &Closing::Done).unwrap();
            s.write_all(&(MAX_FRAME as u32 + 1).to_be_bytes()).unwrap();
        });
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(
            read_frame::<Closing>(&s, None).unwrap(),
            Closing::Done
        ));
        writer.join().unwrap();
        let err = read_frame::<Closing>(&s, None).unwrap_err();
        assert!(
            err.to_string().contains("not a netcheck fabric peer"),
            "{err}"
        );
    }

    #[test]
    fn connecting_to_nothing_times_out_with_a_hint() {
        // A port that was just free: nothing listens there.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = connect(&format!("127.0.0.1:{port}"), Duration::from_millis(300)).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::TIMEOUT);
        assert!(err.hint().unwrap().contains("--server"));
    }
}
