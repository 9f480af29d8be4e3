//! `netcheck fabric`: libfabric providers, and RDM ping-pong between two ranks.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::{ByteSize, parse_duration};
use crate::error::{Error, Outcome, Result};
use crate::fabric::endpoint::Selection;
use crate::fabric::pingpong::Plan;
use crate::fabric::session::{self, DEFAULT_PORT, Options, TOKEN_ENV};
use crate::fabric::{Libfabric, info, report};
use crate::output;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// List providers, fabrics, domains and endpoint types (the default without a mode).
    #[arg(long, conflicts_with_all = ["local", "server", "connect", "respond_to"])]
    pub list: bool,
    /// libfabric provider (e.g. efa, tcp, shm); default: libfabric's first RDM provider.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// libfabric domain (an EFA device such as rdmap16s27-rdm, or an interface for tcp).
    #[arg(long, value_name = "NAME")]
    pub domain: Option<String>,
    /// Run both ranks on this host (two processes).
    #[arg(long, conflicts_with_all = ["server", "connect", "respond_to"])]
    pub local: bool,
    /// Wait for one peer (`--connect`), answer its ping-pong, then exit.
    #[arg(long, conflicts_with_all = ["connect", "respond_to"])]
    pub server: bool,
    /// Address `--server` listens on.
    #[arg(long, value_name = "HOST:PORT", default_value_t = SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)))]
    pub bind: SocketAddr,
    /// Measure against a `--server` peer at HOST:PORT (HOST alone means port 18600).
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "respond_to")]
    pub connect: Option<String>,
    /// Internal: the second rank of `--local`.
    #[arg(long, value_name = "HOST:PORT", hide = true)]
    pub respond_to: Option<String>,
    /// Message sizes, comma-separated (e.g. 8,4K,1M; at most 64M).
    #[arg(
        long,
        value_name = "SIZES",
        value_delimiter = ',',
        default_value = "8,64,512,4K,32K,256K,1M",
        allow_negative_numbers = true,
        value_parser = crate::flags::size(1, Some(crate::fabric::pingpong::MAX_SIZE))
    )]
    pub sizes: Vec<ByteSize>,
    /// Timed ping-pong round trips per size.
    #[arg(long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(1, Some(crate::fabric::pingpong::MAX_ITERS.into())))]
    pub iters: u32,
    /// Untimed round trips per size before timing.
    #[arg(long, value_name = "N", default_value_t = 100, allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(0, Some(crate::fabric::pingpong::MAX_ITERS.into())))]
    pub warmup: u32,
    /// Messages in flight per bandwidth window.
    #[arg(long, value_name = "N", default_value_t = 64, allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(1, Some(crate::fabric::pingpong::MAX_WINDOW.into())))]
    pub window: u32,
    /// Timed bandwidth windows per size.
    #[arg(long, value_name = "N", default_value_t = 16, allow_negative_numbers = true,
          value_parser = crate::flags::int::<u32>(1, Some(crate::fabric::pingpong::MAX_BATCHES.into())))]
    pub batches: u32,
    /// Give up when the peer is silent this long (e.g. 30s, 1m30s); exit 124. `--server`
    /// also waits at most this long for the driver to connect.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: String,
    /// Shared secret both sides must use (or set NETCHECK_FABRIC_TOKEN).
    #[arg(long, value_name = "TOKEN", env = TOKEN_ENV, hide_env_values = true)]
    pub token: Option<String>,
    /// Output format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    let ignored = ignored_signals();
    let is_pingpong =
        args.local || args.server || args.connect.is_some() || args.respond_to.is_some();
    // Flags are checked before libfabric is needed: a typo is a usage error on any machine.
    let opts = if is_pingpong {
        Some(options(&args)?)
    } else {
        None
    };
    let lib = Arc::new(Libfabric::load()?);
    exit_on_signals(&ignored);
    let Some(opts) = opts else {
        let listing = info::list(&lib, args.provider.as_deref(), args.domain.as_deref())?;
        let text = match args.format.as_str() {
            "json" => to_json(&listing)?,
            _ => report::listing_text(&listing),
        };
        output::stdout(&text).map_err(|e| Error::infra(format!("writing to stdout: {e}")))?;
        return Ok(Outcome::Pass);
    };
    if let Some(addr) = &args.respond_to {
        let stream = session::connect(addr, opts.timeout)?;
        session::respond(lib, stream, &opts)?;
        return Ok(Outcome::Pass);
    }
    if args.server {
        let plan = session::listen_and_respond(lib, args.bind, &opts)?;
        crate::say!(
            "netcheck fabric: served {} message sizes; the driver has the numbers",
            plan.sizes.len()
        );
        return Ok(Outcome::Pass);
    }
    let report = match &args.connect {
        Some(addr) => session::connect_and_drive(lib, addr, &opts)?,
        None => {
            let exe = std::env::current_exe().map_err(|e| {
                Error::infra(format!(
                    "cannot find the netcheck binary to start the second rank: {e}"
                ))
            })?;
            session::local(lib, &exe, &opts)?
        }
    };
    let text = match args.format.as_str() {
        "json" => to_json(&report)?,
        _ => report.to_text(),
    };
    output::stdout(&text).map_err(|e| Error::infra(format!("writing to stdout: {e}")))?;
    if report.passed() {
        Ok(Outcome::Pass)
    } else {
        crate::say!(
            "netcheck fabric: payloads came back wrong; the fabric or the provider corrupts or reorders data"
        );
        Ok(Outcome::Fail)
    }
}

/// Ctrl-C (SIGINT) and SIGTERM end the command with the documented exit code 130 and one line
/// on stderr, wherever it is waiting (on the peer, in libfabric). Installed after libfabric is
/// loaded, replacing what its providers put there: Debian's libfabric loads the PSM provider,
/// whose libinfinipath installs SIGINT/SIGTERM handlers that `exit(1)`, which reads as "a
/// payload came back wrong". A signal that was ignored when netcheck started (a background job
/// of a non-interactive shell) stays ignored. The second rank of `--local` does the same.
fn exit_on_signals(ignored: &[libc::c_int]) {
    extern "C" fn on_signal(signal: libc::c_int) {
        let msg: &[u8] = if signal == libc::SIGINT {
            b"netcheck fabric: interrupted (SIGINT)\n"
        } else {
            b"netcheck fabric: interrupted (SIGTERM)\n"
        };
        // SAFETY: write(2) and _exit(2) are async-signal-safe.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(crate::exit::INTERRUPTED.into());
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = if ignored.contains(&signal) {
                libc::SIG_IGN
            } else {
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
            };
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The signals among SIGINT and SIGTERM that are ignored now.
fn ignored_signals() -> Vec<libc::c_int> {
    [libc::SIGINT, libc::SIGTERM]
        .into_iter()
        .filter(|&signal| {
            // SAFETY: reads the current action only.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            }
        })
        .collect()
}

fn options(args: &Args) -> Result<Options> {
    let timeout =
        parse_duration(&args.timeout).map_err(|e| Error::usage(format!("--timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(Error::usage("--timeout must be more than zero"));
    }
    let plan = Plan {
        sizes: args.sizes.iter().map(|s| s.0).collect(),
        iters: args.iters,
        warmup: args.warmup,
        window: args.window,
        batches: args.batches,
    };
    // The provider's own size limit is checked once the endpoint is open.
    plan.validate(u64::MAX)?;
    Ok(Options {
        selection: Selection {
            provider: args.provider.clone(),
            domain: args.domain.clone(),
        },
        plan,
        timeout,
        token: args.token.clone(),
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::infra(format!("encoding JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}
