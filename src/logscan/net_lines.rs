//! Network-setup lines: `NET/Plugin` loading (grammar §3), the built-in IB and Socket
//! transports (§4.3) and aws-ofi-nccl's `NET/OFI` messages (§7). These appear a few times per
//! process, so clarity beats speed here.

use std::sync::LazyLock;

use regex::Regex;

use memchr::memmem::Finder;

use super::event::{Event, IbDevice, Needle, OfiEvent, interface_name, split_once};
use super::prefix::parse_u32;

/// Classifies a message that starts with `NET` (INFO or WARN).
pub fn classify(msg: &str) -> Option<Event<'_>> {
    if let Some(rest) = msg.strip_prefix("NET/OFI ") {
        // NCCL's own lines about the network named `OFI` (aws-ofi-nccl 1.13+ under
        // `NCCL_NET=OFI`) put a colon after the name; the plugin's never start with one.
        if let Some(own) = rest.strip_prefix(':') {
            return gdr_from(own.trim_start());
        }
        return ofi(rest).map(Event::Ofi);
    }
    if let Some(rest) = strip_subsystem(msg, "NET/Plugin") {
        return plugin(rest);
    }
    // 2.29+ (net_ib/gin.cc): GPU-initiated networking over the same verbs devices; its
    // completion errors, like NET/IB's, exist only on a connection that carried data.
    if let Some(rest) = strip_subsystem(msg, "NET/IB/GIN")
        && rest.starts_with("Got completion")
    {
        return Some(Event::NetTrafficError { ib: true });
    }
    if let Some(rest) = strip_subsystem(msg, "NET/IB") {
        return ib(rest);
    }
    if msg.starts_with("Net/IB: call to devices() returned 0 devices") {
        return Some(Event::IbNoDevice);
    }
    if let Some(rest) = strip_subsystem(msg, "NET/Socket") {
        return socket(rest);
    }
    if let Some(rest) = msg.strip_prefix("NET : Using interface ") {
        return Some(Event::SocketInterfaces(rest));
    }
    // 2.19+: `NET/<any network> : GPU Direct RDMA Enabled|Disabled for HCA ...`.
    gdr_nic(msg).or_else(|| self_named(msg))
}

/// `NET/FastSocket : Connected after 18 retries.`, `NET/GPUDirectTCPX : GPUDirectTCPX enable:
/// 1`: an external plugin's own lines carry its name (NCCL's built-in modules and
/// aws-ofi-nccl are read above). A connection it reports made or accepted is a NET
/// connection.
fn self_named(msg: &str) -> Option<Event<'_>> {
    let rest = msg.strip_prefix("NET/")?;
    let end = rest.find([' ', ':'])?;
    let name = &rest[..end];
    let after = rest[end..].trim_start_matches(' ').strip_prefix(':')?;
    // NCCL's own subsystems (2.26–2.27 graph/topo.cc WARNs `NET/TOPO : Couldn't find net
    // with name X`) and the names read above.
    let builtin = ["IB", "Socket", "OFI", "Plugin", "GDR", "TOPO"];
    if name.is_empty()
        || builtin.contains(&name)
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let after = after.trim_start();
    // Plugins built on NCCL's IB code print its port list (`Using [0]mlx5_0:1/RoCE …`).
    if let Some(list) = after.strip_prefix("Using ") {
        let list = &list[..OOB.find(list.as_bytes()).unwrap_or(list.len())];
        let verbs = ib_devices(list)
            .iter()
            .any(|d| ["ib", "roce"].contains(&d.link_layer.to_ascii_lowercase().as_str()));
        if verbs {
            return Some(Event::PluginVerbsDevices { name, list });
        }
    }
    let connected = after.starts_with("Connected") || after.starts_with("Accepted");
    Some(Event::PluginSelfNamed { name, connected })
}

/// `NET/IB : rest`, `NET/IB: rest` → `rest`.
fn strip_subsystem<'a>(msg: &'a str, subsystem: &str) -> Option<&'a str> {
    let rest = msg.strip_prefix(subsystem)?;
    let rest = rest.trim_start_matches(' ');
    Some(rest.strip_prefix(':')?.trim_start())
}

fn plugin(rest: &str) -> Option<Event<'_>> {
    if let Some(name) = rest.strip_prefix("Plugin name set by env to ") {
        return Some(Event::PluginRequested(name.trim()));
    }
    if let Some(name) = rest.strip_prefix("Loaded net plugin ") {
        let name = name.split(" (v").next().unwrap_or(name).trim();
        return Some(Event::PluginLoaded(name));
    }
    // Stepping down through API versions is normal; only "no version at all" is fatal.
    if rest.starts_with("Failed to find ncclNetPlugin symbol (") {
        return Some(Event::PluginIncompatible);
    }
    if let Some(error) = dlopen_error(rest) {
        return Some(if error.plugin_absent() {
            Event::PluginNotFound
        } else {
            Event::PluginLoadFailed
        });
    }
    let not_found = rest.starts_with("Could not find")
        || rest.starts_with("No plugin found")
        || rest.starts_with("Plugin load");
    not_found.then_some(Event::PluginNotFound)
}

/// What `dlopen` said when NCCL tried a net plugin library (§3): `error` is `dlerror()`'s
/// text, `tried` the library name where the line gives it.
struct DlopenError<'a> {
    error: &'a str,
    tried: Option<&'a str>,
}

/// The `dlerror()` text of a `NET/Plugin` line, in each release's wording: 2.4–2.16 and
/// 2.19–2.20 `Plugin load returned %d : %s.`, 2.17–2.18 `Plugin load (%s) returned %d : %s`,
/// 2.19–2.20 `dlerror=%s No plugin found (%s), using internal implementation`, 2.21 `Plugin
/// load returned %d : %s [:] when loading %s` and `Most recent plugin load returned %d : %s.
/// All attempts to load '%s' also failed.`; 2.26+ print the text alone (`%s/Plugin: %s`), or
/// after the library's name (2.29+ `%s/Plugin: %s: %s`), which the glibc loader's own
/// wording gives away.
fn dlopen_error(rest: &str) -> Option<DlopenError<'_>> {
    if let Some(text) = rest.strip_prefix("dlerror=") {
        let (error, after) = text.split_once(" No plugin found").unwrap_or((text, ""));
        let tried = after
            .split_once('(')
            .and_then(|(_, t)| t.split_once(')'))
            .map(|(t, _)| t);
        return Some(DlopenError { error, tried });
    }
    if rest.starts_with("Most recent plugin load returned ") {
        let error = returned(rest)?;
        let (error, tried) = error
            .split_once(". All attempts to load '")
            .unwrap_or((error, ""));
        let tried = tried.split_once('\'').map(|(t, _)| t);
        return Some(DlopenError { error, tried });
    }
    if let Some(text) = rest.strip_prefix("Plugin load") {
        let tried = text
            .strip_prefix(" (")
            .and_then(|t| t.split_once(')'))
            .map(|(t, _)| t);
        let error = returned(text)?;
        let (error, tried) = match error.split_once(" when loading ") {
            Some((error, name)) => (error.trim_end_matches(" :"), Some(name.trim())),
            None => (error.trim_end_matches('.'), tried),
        };
        return Some(DlopenError { error, tried });
    }
    // The loader's message starts with the file it is about: `<file>: <what went wrong>`.
    let from_loader = rest
        .split_once(": ")
        .is_some_and(|(file, _)| !file.is_empty() && !file.contains(char::is_whitespace));
    let loader_wording = rest.contains(NOT_THERE) || CANNOT_LOAD.iter().any(|w| rest.contains(w));
    (from_loader && loader_wording).then_some(DlopenError {
        error: rest,
        tried: None,
    })
}

/// `… returned <errno> : <text>` → `<text>`.
fn returned(text: &str) -> Option<&str> {
    let (_, after) = text.split_once(" returned ")?;
    let (errno, error) = after.split_once(" : ")?;
    errno.trim().parse::<i64>().ok().map(|_| error)
}

/// The glibc dynamic loader's message (`dlerror()`) for a library it could not find.
const NOT_THERE: &str = "cannot open shared object file";

/// The glibc dynamic loader's messages for a library that is there and cannot be loaded.
const CANNOT_LOAD: [&str; 8] = [
    "' not found (required by ",
    "undefined symbol: ",
    "wrong ELF class",
    "invalid ELF header",
    "file too short",
    "cannot enable executable stack",
    "failed to map segment",
    "cannot allocate memory in static TLS block",
];

impl DlopenError<'_> {
    /// Whether the library that could not be opened is the plugin NCCL looked for, not
    /// installed: the routine case. NCCL names every net plugin library `libnccl-net*.so`
    /// (or the path `NCCL_NET_PLUGIN` gives), and no plugin needs another library of that
    /// name. Anything else (a library the plugin needs is missing, a symbol version it was
    /// built against is not in the one the loader found, a wrong architecture) means the
    /// plugin is there and the loader could not load it.
    fn plugin_absent(&self) -> bool {
        let Some((file, _)) = self.error.split_once(": cannot open shared object file") else {
            // No text from the loader at all (`(null)`): nothing says the plugin is there.
            return !CANNOT_LOAD.iter().any(|w| self.error.contains(w));
        };
        // 2.29+ may put the library's name first: `libnccl-net.so: libfabric.so.1: cannot …`.
        let file = file
            .rsplit(": ")
            .next()
            .unwrap_or(file)
            .to_ascii_lowercase();
        let base = |path: &str| {
            path.rsplit('/')
                .next()
                .unwrap_or(path)
                .trim()
                .to_ascii_lowercase()
        };
        file.contains("nccl") || self.tried.is_some_and(|t| file.contains(&base(t)))
    }
}

/// A device of the list: `[0]mlx5_0:1/IB` (2.4+); a merged device `mlx5_0+mlx5_1:1/RoCE`
/// (2.20+); in 2.30 the rail and plane ids after the port, `mlx5_0:1:0:1/IB`, or `mlx5_0:1::1/IB`
/// when only the plane is set.
static IB_DEVICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z0-9_.+\-]+):\d+(?::\d*)?(?::\d+)?/([A-Za-z]+)").expect("valid regex")
});

fn ib(rest: &str) -> Option<Event<'_>> {
    if rest.starts_with("No device found") {
        return Some(Event::IbNoDevice);
    }
    // 2.2/2.3: one port per line, `NET/IB: [0] mlx5_1:1/IB`.
    if rest.starts_with('[') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return Some(Event::IbDevices(rest));
    }
    // Completion errors exist only on a connection that carried data (every era's form).
    if rest.starts_with("Got completion") {
        return Some(Event::NetTrafficError { ib: true });
    }
    // net_ib.cc (2.4.8+, WARN): `ibv_open_device` failed on a device that `ibv_get_device_list`
    // listed: the HCA exists, the process cannot use it (no /dev/infiniband in a container).
    if rest.starts_with("Unable to open device") {
        return Some(Event::IbOpenFailed);
    }
    if let Some(devices) = rest.strip_prefix("Using ") {
        // Devices come before `; OOB <if>`; the OOB interface is not a device.
        let end = OOB.find(devices.as_bytes()).unwrap_or(devices.len());
        return Some(Event::IbDevices(&devices[..end]));
    }
    gdr_from(rest)
}

/// `[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO];` or grouped `[0]={[0] mlx5_0:1/RoCE, ...}` →
/// devices with their link layer.
pub fn ib_devices(list: &str) -> Vec<IbDevice> {
    if !list.contains('/') {
        return Vec::new();
    }
    if let Some(device) = device_line(list) {
        return vec![device];
    }
    IB_DEVICE
        .captures_iter(list)
        .take(64)
        .map(|c| IbDevice {
            name: c[1].to_string(),
            link_layer: c[2].to_string(),
        })
        .collect()
}

/// 2.27+'s line per device, `[0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=…`
/// (`[%d] %s:%s:%d/%s provider=%s …`): the device, its uverbs node and its port. The list
/// regex would take the uverbs node for the device.
fn device_line(text: &str) -> Option<IbDevice> {
    if !text.contains(" provider=") {
        return None;
    }
    let (index, rest) = text.strip_prefix('[')?.split_once("] ")?;
    parse_u32(index.as_bytes())?;
    let (port, link_layer) = rest.split_whitespace().next()?.split_once('/')?;
    let mut parts = port.split(':');
    let (name, _uverbs, number) = (parts.next()?, parts.next()?, parts.next()?);
    let valid = parts.next().is_none()
        && !name.is_empty()
        && parse_u32(number.as_bytes()).is_some()
        && !link_layer.is_empty();
    valid.then(|| IbDevice {
        name: name.to_string(),
        link_layer: link_layer.to_string(),
    })
}

fn socket(rest: &str) -> Option<Event<'_>> {
    // `Using 2 threads and 8 sockets per thread` (every release) comes with a connection,
    // and lists no interface.
    if rest.ends_with("sockets per thread") {
        return None;
    }
    if let Some(list) = rest.strip_prefix("Using ") {
        return Some(Event::SocketInterfaces(list));
    }
    // net_socket.cc's WARN when a NET/Socket connection fails mid-transfer.
    if rest.starts_with("socket progress error") {
        return Some(Event::NetTrafficError { ib: false });
    }
    gdr_from(rest)
}

/// `[0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>` → `eth0`, `eth1`; 2.3's single `eth0:10.0.0.1<0>`
/// → `eth0`.
pub fn socket_interfaces(list: &str) -> Vec<&str> {
    if !list.starts_with('[') {
        return vec![interface_name(list)];
    }
    list.split_whitespace()
        .filter_map(|item| item.strip_prefix('['))
        .filter_map(|item| item.split_once(']'))
        .map(|(_, iface)| interface_name(iface))
        .filter(|name| !name.is_empty())
        .take(64)
        .collect()
}

/// The first `name:address` of an interface list (`[0]eth0:10.0.0.1<0> [1]...` or
/// `eth0:10.0.0.1<0>`) → (`eth0`, `10.0.0.1`); IPv6 addresses keep their colons. 2.26+'s
/// bootstrap over the network plugin, `Bootstrap: Using mlx5_0:0`, names a device and its
/// index: no address.
pub fn first_interface_address(list: &str) -> Option<(&str, &str)> {
    let first = list.split_whitespace().next()?;
    let first = first.split_once(']').map_or(first, |(_, rest)| rest);
    let (name, rest) = first.split_once(':')?;
    let address = rest.split('<').next().unwrap_or(rest);
    let index = address.bytes().all(|b| b.is_ascii_digit());
    (!name.is_empty() && !index).then_some((name, address))
}

/// The interfaces of an interface list whose address is link-local (`169.254.x.x`,
/// `fe80::`): `[0]eth0:10.0.0.1<0> [1]pod-id-link0:169.254.170.23<0>` → `pod-id-link0`.
/// Such an address cannot reach another node.
pub fn link_local_interfaces(list: &str) -> Vec<&str> {
    // Most lists have neither prefix: skip the split (this runs on every NET/Socket line).
    let bytes = list.as_bytes();
    let fe80 = || {
        memchr::memchr2_iter(b'f', b'F', bytes).any(|at| {
            bytes[at..]
                .get(..5)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"fe80:"))
        })
    };
    if memchr::memmem::find(bytes, b"169.254.").is_none() && !fe80() {
        return Vec::new();
    }
    list.split_whitespace()
        .map(|item| item.split_once(']').map_or(item, |(_, rest)| rest))
        .filter_map(|item| item.split_once(':'))
        .filter(|(_, addr)| {
            let starts = |p: &str| {
                addr.get(..p.len())
                    .is_some_and(|a| a.eq_ignore_ascii_case(p))
            };
            starts("169.254.") || starts("fe80:")
        })
        .map(|(name, _)| name)
        .filter(|name| !name.is_empty())
        .take(16)
        .collect()
}

fn gdr_nic(msg: &str) -> Option<Event<'_>> {
    let (_, rest) = split_once(msg, &SPACED_COLON)?;
    gdr_from(rest)
}

/// `GPU Direct RDMA Enabled|Disabled for HCA 0 'mlx5_0'` (2.7+), `... for GPU 0[0] / HCA 0
/// (distance 4 >= 2)` (2.4) and `... for GPU 0[0] / HCA 0 'mlx5_0' (no module or not supported
/// by GPU)`.
pub fn gdr_from(rest: &str) -> Option<Event<'_>> {
    if rest.starts_with("GPU Direct RDMA Enabled for ") {
        Some(Event::GdrNic { enabled: true })
    } else if rest.starts_with("GPU Direct RDMA Disabled for ") {
        Some(Event::GdrNic { enabled: false })
    } else {
        None
    }
}

/// `Selected Provider is efa`, `... is efa (found 4 nics)` (1.6–1.13),
/// `Selected provider is efa, fabric is efa-direct (found 32 nics)` (1.14+).
fn provider(rest: &str) -> Option<OfiEvent<'_>> {
    let rest = rest
        .strip_prefix("Selected Provider is ")
        .or_else(|| rest.strip_prefix("Selected provider is "))?;
    let end = rest.find([',', ' ', '(']).unwrap_or(rest.len());
    let provider = &rest[..end];
    if provider.is_empty() {
        return None;
    }
    let fabric = rest[end..].strip_prefix(", fabric is ").map(|f| {
        let end = f.find([' ', '(']).unwrap_or(f.len());
        &f[..end]
    });
    let nics = split_once(rest, &FOUND)
        .map(|(_, after)| after)
        .and_then(|n| n.split(' ').next())
        .and_then(|n| parse_u32(n.as_bytes()));
    Some(OfiEvent::Provider {
        provider,
        fabric,
        nics,
    })
}

/// An aws-ofi-nccl message (after `NET/OFI `).
/// The 1.13+ tuner's `Tuner init: comm with 16 ranks and 2 nodes.` (also `Model Tuner init
/// (platform 1): …` and `Region Tuner init (platform 2): …`): a communicator's size and node
/// count, as NCCL gave them to the tuner.
fn tuner_comm(rest: &str) -> Option<OfiEvent<'_>> {
    let (head, counts) = rest.split_once("Tuner init")?;
    if !matches!(head, "" | "Model " | "Region ") {
        return None;
    }
    let counts = counts.split_once(": comm with ")?.1;
    let (nranks, rest) = counts.split_once(" ranks and ")?;
    let nnodes = rest
        .strip_suffix('.')
        .unwrap_or(rest)
        .strip_suffix(" nodes")?;
    Some(OfiEvent::TunerComm {
        nranks: parse_u32(nranks.as_bytes())?,
        nnodes: parse_u32(nnodes.as_bytes())?,
    })
}

fn ofi(rest: &str) -> Option<OfiEvent<'_>> {
    if let Some(version) = rest
        .strip_prefix("Initializing aws-ofi-nccl ")
        .or_else(|| rest.strip_prefix("Using aws-ofi-nccl "))
    {
        return Some(OfiEvent::PluginVersion(version.trim()));
    }
    if rest.starts_with("Selected") {
        return provider(rest);
    }
    let provider_missing = [
        "Couldn't find any optimal provider",
        "Could not find any optimal provider",
        "OFI fi_getinfo() call failed",
        "No eligible providers were found",
        "Only EFA provider is supported",
        // 1.1–1.13: the tcp provider, once the interface filters were applied.
        "No viable endpoint found for TCP provider",
    ];
    if provider_missing.iter().any(|p| rest.starts_with(p)) {
        return Some(OfiEvent::ProviderMissing);
    }
    // Each ends the plugin's init: `fi_fabric` failing on the provider fi_getinfo gave (every
    // release; `Couldn't create fabric` and the ofiutils form in 1.21), and 1.21's C++ entry
    // points reporting an exception from init.
    // `Failed to initialize sendrecv|rdma protocol` (1.7+, a protocol the user or platform
    // chose) and `Failed to initialize RDMA protocol` (1.13+, the protocol selected) end it
    // too, as does 1.13+'s `Unable to find a protocol that worked.  Failing initialization.`
    // and 1.7+'s `CUDA initialization failed.`
    if rest
        .strip_prefix("Failed to initialize ")
        .and_then(|r| r.split_once(' '))
        .is_some_and(|(_, after)| after.starts_with("protocol"))
    {
        return Some(OfiEvent::InitFailed);
    }
    let init_failed = [
        "aws-ofi-nccl initialization failed",
        "Unable to find a protocol that worked",
        "CUDA initialization failed",
        "Initializing plugin failed",
        "Caught exception in plugin init",
        "Couldn't open a fabric provider",
        "Couldn't create fabric.",
    ];
    if init_failed.iter().any(|p| rest.starts_with(p)) {
        return Some(OfiEvent::InitFailed);
    }
    if let Some(comm) = tuner_comm(rest) {
        return Some(comm);
    }
    if let Some(version) = rest.strip_prefix("Using Libfabric version ") {
        return Some(OfiEvent::LibfabricVersion(version.trim()));
    }
    if let Some(version) = rest.strip_prefix("EFA provider requires at least libfabric version ") {
        return Some(OfiEvent::LibfabricTooOld(
            version.trim().trim_end_matches('.'),
        ));
    }
    if let Some(filter) = rest.strip_prefix("Setting provider_filter to ") {
        return Some(OfiEvent::ProviderFilter(filter.trim()));
    }
    // `Running on %s platform, Setting NCCL_TOPO_FILE …` (1.4–1.13), `…, NCCL_TOPO_FILE
    // environment variable is already set to …` (1.7+), `…, topology file …` (1.16+).
    if let Some((platform, _)) = rest
        .strip_prefix("Running on ")
        .and_then(|r| r.split_once(" platform"))
        && !platform.is_empty()
        && !platform.contains(' ')
    {
        return Some(OfiEvent::Platform(platform));
    }
    // Most NET/OFI lines are informational; test for the rare ones with one byte search each.
    let bytes = rest.as_bytes();
    if COMPLETED_WITH_ERROR.find(bytes).is_some() {
        return Some(OfiEvent::TrafficError {
            detail: ofi_error_detail(rest),
        });
    }
    if GDR.find(bytes).is_some()
        && (rest.contains("disabling GDR")
            || rest.contains("GDR not supported")
            // AWS builds 1.7.4+: OFI_NCCL_DISABLE_GDR_REQUIRED_CHECKS on a GDR instance.
            || rest.starts_with("GDR disabled on GDR-supported instance type"))
    {
        return Some(OfiEvent::GdrOff);
    }
    if EFA.find(bytes).is_some() || FI_ADDR_EFA.find(bytes).is_some() {
        return Some(OfiEvent::EfaRuntime);
    }
    None
}

static GDR: Needle = LazyLock::new(|| Finder::new(b"GDR"));
static COMPLETED_WITH_ERROR: Needle = LazyLock::new(|| Finder::new(b"completed with error"));

/// The error of a request that completed with one: `Error: 5 (Input/output error)` (1.4+),
/// 1.21's `strerror: Input/output error`.
fn ofi_error_detail(rest: &str) -> Option<&str> {
    let (at, key) = [("strerror: ", ','), ("Error: ", '.')]
        .into_iter()
        .find_map(|(key, end)| rest.find(key).map(|at| (at + key.len(), end)))?;
    let detail = &rest[at..];
    // `Error: 5 (Input/output error). Completed length: 0`: up to the sentence's end, and
    // whole parentheses.
    let end = match detail.find(')') {
        Some(close) if key == '.' && detail[..close].contains('(') => close + 1,
        _ => detail.find(key).unwrap_or(detail.len()),
    };
    let detail = detail[..end].trim();
    (!detail.is_empty()).then_some(detail)
}
static EFA: Needle = LazyLock::new(|| Finder::new(b"EFA device"));
static FI_ADDR_EFA: Needle = LazyLock::new(|| Finder::new(b"fi_addr_efa"));
static OOB: Needle = LazyLock::new(|| Finder::new(b"OOB"));
static SPACED_COLON: Needle = LazyLock::new(|| Finder::new(b" : "));
static FOUND: Needle = LazyLock::new(|| Finder::new(b"(found "));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ofi_requests_that_completed_with_an_error() {
        // aws-ofi-nccl ARUN51a (1.4–1.9), ARUN51b (1.11–1.16), ARUN51e (1.21), ARUN289 (1.21),
        // ARUN131 (1.7–1.11).
        for (line, detail) in [
            (
                "NET/OFI Request 0x7f3c completed with error. RC: -5. Error: Input/output error. Completed length: 0, Request: { dev: 0 }",
                Some("Input/output error"),
            ),
            (
                "NET/OFI Request 0x7f3c completed with error. RC: -5. Error: 5 (Input/output error). Completed length: 0, Request: { dev: 0 }",
                Some("5 (Input/output error)"),
            ),
            (
                "NET/OFI Remote write completed with error. RC: -5. Flags: 0. Error: 5 (Input/output error). Completed length: 0",
                Some("5 (Input/output error)"),
            ),
            (
                "NET/OFI Request 0x7f01 (send) completed with error: err: 5, flags: 0, prov_errno: 4118, strerror: Input/output error, len: 0",
                Some("Input/output error"),
            ),
            ("NET/OFI Request completed with error", None),
        ] {
            let event = OfiEvent::TrafficError { detail };
            assert_eq!(classify(line), Some(Event::Ofi(event)), "{line}");
        }
    }

    #[test]
    fn the_tuner_counts_ranks_and_nodes() {
        // aws-ofi-nccl 1.13+ (tuner/nccl_ofi_tuner, _model, _regions): ATUN9a-c.
        for line in [
            "NET/OFI Tuner init: comm with 16 ranks and 2 nodes.",
            "NET/OFI Model Tuner init (platform 1): comm with 16 ranks and 2 nodes.",
            "NET/OFI Region Tuner init (platform 2): comm with 16 ranks and 2 nodes.",
        ] {
            let comm = OfiEvent::TunerComm {
                nranks: 16,
                nnodes: 2,
            };
            assert_eq!(classify(line), Some(Event::Ofi(comm)), "{line}");
        }
        for other in [
            "NET/OFI Tuner init: comm with many ranks and 2 nodes.",
            "NET/OFI My Tuner init: comm with 16 ranks and 2 nodes.",
            "NET/OFI Region base Tuner is chosen for platform: P5en",
        ] {
            assert!(
                !matches!(
                    classify(other),
                    Some(Event::Ofi(OfiEvent::TunerComm { .. }))
                ),
                "{other}"
            );
        }
    }

    /// A plugin library that is there and cannot be loaded: dlopen names another library as
    /// missing, or a symbol version or symbol as not found (glibc's wording), in each
    /// release's form of the line (§3).
    #[test]
    fn a_plugin_the_loader_could_not_load() {
        for line in [
            "NET/Plugin : Plugin load returned 2 : libfabric.so.1: cannot open shared object file: No such file or directory.",
            "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libfabric.so.1: cannot open shared object file: No such file or directory",
            "NET/Plugin : dlerror=libcudart.so.12: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation",
            "NET/Plugin: Plugin load returned 0 : /lib/x86_64-linux-gnu/libfabric.so.1: version `FABRIC_1.8' not found (required by /opt/amazon/ofi-nccl/lib/libnccl-net.so) when loading libnccl-net.so",
            "NET/Plugin: Most recent plugin load returned 0 : /opt/x/libnccl-net.so: undefined symbol: fi_av_set. All attempts to load 'libnccl-net.so' also failed.",
            "NET/Plugin: /lib/x86_64-linux-gnu/libfabric.so.1: version `FABRIC_1.8' not found (required by /opt/amazon/ofi-nccl/lib/libnccl-net.so)",
            "NET/Plugin: libnccl-net.so: libfabric.so.1: cannot open shared object file: No such file or directory",
            "NET/Plugin: /opt/x/libnccl-net.so: wrong ELF class: ELFCLASS32",
        ] {
            assert_eq!(classify(line), Some(Event::PluginLoadFailed), "{line}");
        }
        // Lines that mention a library but are no loader message.
        for line in [
            "NET/Plugin: Could not find: libnccl-net.so.",
            "NET/Plugin : dler# Rank 0 ror=libcudart.so: cannot open shared object file",
            "NET/Plugin: Successfully loaded external plugin libnccl-net.so",
            "NET/Plugin: Using internal network plugin.",
        ] {
            assert_ne!(classify(line), Some(Event::PluginLoadFailed), "{line}");
        }
    }

    #[test]
    fn plugin_loading_of_every_era() {
        for line in [
            "NET/Plugin : No plugin found (libnccl-net.so).",
            "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
            "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory",
            "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file No plugin found (libnccl-net.so), using internal implementation",
            "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
            "NET/Plugin: Could not find: libnccl-net.so",
            "NET/Plugin: Could not find: ofi libnccl-net-ofi.so",
            // dlopen's errno is often not ENOENT for a library that is not there: up to 2.16
            // NCCL then prints the loader's message, which names the plugin itself.
            "NET/Plugin : Plugin load returned 17 : libnccl-net.so: cannot open shared object file: No such file or directory.",
            "NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory when loading libnccl-net.so",
            "NET/Plugin: Most recent plugin load returned 2 : libnccl-net-ofi.so: cannot open shared object file: No such file or directory. All attempts to load 'ofi' also failed.",
            "NET/Plugin: Plugin load returned 2 : /opt/x/plugin.so: cannot open shared object file: No such file or directory : when loading /opt/x/plugin.so",
            "NET/Plugin : Plugin load returned 0 : (null).",
        ] {
            assert_eq!(classify(line), Some(Event::PluginNotFound), "{line}");
        }
        assert_eq!(
            classify("NET/Plugin: Loaded net plugin Libfabric (v10)"),
            Some(Event::PluginLoaded("Libfabric"))
        );
        assert_eq!(
            classify("NET/Plugin: Plugin name set by env to libnccl-net.so"),
            Some(Event::PluginRequested("libnccl-net.so"))
        );
        assert_eq!(
            classify("NET/Plugin: Failed to find ncclNetPlugin_v9 symbol."),
            None
        );
        assert_eq!(
            classify(
                "NET/Plugin: Failed to find ncclCollNetPlugin symbol (>= v5). ncclCollNetPlugin symbols v4 and lower are not supported."
            ),
            None
        );
        assert_eq!(
            classify(
                "NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not supported."
            ),
            Some(Event::PluginIncompatible)
        );
    }

    #[test]
    fn ib_devices_and_link_layers() {
        let devices = |line| match classify(line) {
            Some(Event::IbDevices(list)) => ib_devices(list),
            other => panic!("{other:?}"),
        };
        let devs =
            devices("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>");
        let got: Vec<_> = devs
            .iter()
            .map(|d| (d.name.as_str(), d.link_layer.as_str()))
            .collect();
        assert_eq!(got, [("mlx5_0", "IB"), ("mlx5_1", "RoCE")]);
        let devs = devices(
            "NET/IB : Using [0]={[0] mlx5_0:1/RoCE, [1] mlx5_1:1/RoCE} [1]={[0] mlx5_2:1/RoCE} ; OOB eth0:10.0.0.1<0>",
        );
        assert_eq!(devs.len(), 3);
        // 2.20+ merged devices; 2.30 rail and plane ids (`:rail:plane`, `::plane` without a
        // rail) between the port and the link layer.
        let named = |line| {
            devices(line)
                .into_iter()
                .map(|d| format!("{}/{}", d.name, d.link_layer))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            named("NET/IB : Using [0]mlx5_0+mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"),
            ["mlx5_0+mlx5_1/RoCE"]
        );
        assert_eq!(
            named(
                "NET/IB : Using [0]mlx5_0:1:0/RoCE [1]mlx5_1:1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
            ),
            ["mlx5_0/RoCE", "mlx5_1/RoCE"]
        );
        assert_eq!(
            named("NET/IB : Using [0]mlx5_0:1::0/IB [1]mlx5_1:1:2:1/IB [RO]; OOB ib0:10.0.0.1<0>"),
            ["mlx5_0/IB", "mlx5_1/IB"]
        );
        // 2.27+ also prints one line per device (`[%d] %s:%s:%d/%s provider=%s …`): the
        // device, its uverbs node, the port; 2.30 adds `oooRqSize`.
        assert_eq!(
            named(
                "NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 context=0x7fc37b2a20c0 pciPath=/sys/devices/pci0000:4a/0000:4a:02.0/0000:4b:00.0 ar=0"
            ),
            ["mlx5_0/RoCE"]
        );
        assert_eq!(
            named(
                "NET/IB: [3] mlx5_3:uverbs3:1/IB provider=Mlx5 speed=400000 context=0x1 pciPath=/sys/x ar=1 oooRqSize=0"
            ),
            ["mlx5_3/IB"]
        );
        // What 2.28 prints on a host without IB, right after `No device found`.
        assert!(devices("NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>").is_empty());
        assert_eq!(
            classify("NET/IB : No device found."),
            Some(Event::IbNoDevice)
        );
        assert_eq!(
            classify("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)"),
            Some(Event::GdrNic { enabled: false })
        );
        // 2.29+ GIN over the verbs devices: a completion error is traffic over IB too.
        assert_eq!(
            classify(
                "NET/IB/GIN: Got completion from peer 10.0.0.2<45678> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_0"
            ),
            Some(Event::NetTrafficError { ib: true })
        );
        assert_eq!(classify("NET/IB/GIN: Assigned plugin GIN_IB_GDAKI"), None);
    }

    /// NCCL's GPU Direct RDMA lines of every era, about any network: 2.4 names the GPU and
    /// the distance, 2.7+ the HCA; under `NCCL_NET=OFI` aws-ofi-nccl's network is `OFI`,
    /// which is not one of the plugin's own `NET/OFI` lines.
    #[test]
    fn gdr_lines_of_every_era_and_network() {
        for (line, enabled) in [
            (
                "NET/IB : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 (distance 4 >= 2)",
                false,
            ),
            (
                "NET/AWS Libfabric : GPU Direct RDMA Enabled for GPU 0[0] / HCA 0 (distance 1 < 2), read 1",
                true,
            ),
            (
                "NET/IB : GPU Direct RDMA Disabled for GPU 1[1] / HCA 0 'mlx5_0' (no module or not supported by GPU)",
                false,
            ),
            (
                "NET/OFI : GPU Direct RDMA Enabled for HCA 0 'rdmap16s27'",
                true,
            ),
            (
                "NET/OFI : GPU Direct RDMA Disabled for HCA 3 'rdmap79s0'",
                false,
            ),
            (
                "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
                false,
            ),
        ] {
            assert_eq!(classify(line), Some(Event::GdrNic { enabled }), "{line}");
        }
        assert_eq!(classify("NET/OFI : something else"), None);
    }

    /// Lines of NCCL's own that name no plugin and list no interface.
    #[test]
    fn nccl_lines_that_are_neither_plugins_nor_interface_lists() {
        // 2.26–2.27 graph/topo.cc: TOPO is NCCL's topology code, not a network plugin.
        assert_eq!(
            classify("NET/TOPO : Couldn't find net with name mlx5_0"),
            None
        );
        // Every release, with a connection: thread and socket counts, no interface.
        assert_eq!(
            classify("NET/Socket: Using 2 threads and 8 sockets per thread"),
            None
        );
        assert_eq!(
            classify("NET/Socket : Using [0]eth0:10.0.0.1<0>"),
            Some(Event::SocketInterfaces("[0]eth0:10.0.0.1<0>"))
        );
        // A plugin's own name still counts.
        assert_eq!(
            classify("NET/FastSocket : Connected after 18 retries."),
            Some(Event::PluginSelfNamed {
                name: "FastSocket",
                connected: true
            })
        );
        // A plugin built on NCCL's IB code prints its port list under its own name.
        assert_eq!(
            classify(
                "NET/gIB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
            ),
            Some(Event::PluginVerbsDevices {
                name: "gIB",
                list: "[0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; "
            })
        );
        // Interfaces, or a list without a link layer, are no verbs ports.
        for line in [
            "NET/FastSocket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>",
            "NET/AcmeNet : Using [0]dev0:1/ETH",
        ] {
            assert!(
                matches!(classify(line), Some(Event::PluginSelfNamed { .. })),
                "{line}"
            );
        }
    }

    #[test]
    fn the_first_interface_and_its_address() {
        assert_eq!(
            first_interface_address("[0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>"),
            Some(("eth0", "10.0.0.1"))
        );
        assert_eq!(
            first_interface_address("ib0:fe80::2%ib0<0>"),
            Some(("ib0", "fe80::2%ib0"))
        );
        // A page that took `<0>` for a tag leaves the address.
        assert_eq!(
            first_interface_address("eth0:10.0.0.1"),
            Some(("eth0", "10.0.0.1"))
        );
        // 2.26+ bootstrap over the network plugin: a device and its index, no address.
        assert_eq!(first_interface_address("mlx5_0:0"), None);
        assert_eq!(first_interface_address("N/A:12"), None);
        assert_eq!(first_interface_address("eth0:"), None);
    }

    #[test]
    fn link_local_addresses() {
        assert_eq!(
            link_local_interfaces(
                "[0]eth0:10.0.0.1<0> [1]pod-id-link0:169.254.170.23<0> [2]veth1:fe80::1%veth1<0>"
            ),
            ["pod-id-link0", "veth1"]
        );
        assert!(link_local_interfaces("[0]eth0:10.0.0.1<0> [1]eth1:10.254.1.1<0>").is_empty());
        assert_eq!(link_local_interfaces("ib0:fe80::2%ib0<0>"), ["ib0"]);
        assert_eq!(link_local_interfaces("[0]ib0:FE80::2%ib0<0>"), ["ib0"]);
    }

    #[test]
    fn socket_interfaces_of_every_era() {
        let names = |line| match classify(line) {
            Some(Event::SocketInterfaces(list)) => socket_interfaces(list),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            names("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>"),
            ["eth0", "eth1"]
        );
        assert_eq!(names("NET/Socket : Using [0]lo:127.0.0.1<0>"), ["lo"]);
        assert_eq!(names("NET : Using interface eth0:10.0.0.1<0>"), ["eth0"]);
        assert_eq!(
            classify("NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'"),
            Some(Event::GdrNic { enabled: false })
        );
    }

    #[test]
    fn ofi_messages() {
        let ofi = |line| match classify(line) {
            Some(Event::Ofi(e)) => Some(e),
            _ => None,
        };
        assert_eq!(
            ofi("NET/OFI Selected Provider is efa"),
            Some(OfiEvent::Provider {
                provider: "efa",
                fabric: None,
                nics: None
            })
        );
        assert_eq!(
            ofi("NET/OFI Selected Provider is efa (found 4 nics)"),
            Some(OfiEvent::Provider {
                provider: "efa",
                fabric: None,
                nics: Some(4)
            })
        );
        assert_eq!(
            ofi("NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)"),
            Some(OfiEvent::Provider {
                provider: "efa",
                fabric: Some("efa-direct"),
                nics: Some(32)
            })
        );
        assert_eq!(
            ofi("NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)"),
            Some(OfiEvent::Provider {
                provider: "tcp;ofi_rxm",
                fabric: None,
                nics: Some(1)
            })
        );
        assert_eq!(
            ofi("NET/OFI Initializing aws-ofi-nccl 1.16.2"),
            Some(OfiEvent::PluginVersion("1.16.2"))
        );
        assert_eq!(
            ofi("NET/OFI OFI fi_getinfo() call failed: No data available"),
            Some(OfiEvent::ProviderMissing)
        );
        assert_eq!(
            ofi("NET/OFI aws-ofi-nccl initialization failed"),
            Some(OfiEvent::InitFailed)
        );
        assert_eq!(
            ofi("NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR"),
            Some(OfiEvent::GdrOff)
        );
        assert_eq!(
            ofi("NET/OFI Setting provider_filter to efa"),
            Some(OfiEvent::ProviderFilter("efa"))
        );
        for (line, platform) in [
            (
                "NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE environment variable to /usr/local/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml",
                "P4d",
            ),
            (
                "NET/OFI Running on p5.48xlarge platform, NCCL_TOPO_FILE environment variable is already set to /x.xml",
                "p5.48xlarge",
            ),
            (
                "NET/OFI Running on p4d.24xlarge platform, topology file /opt/amazon/ofi-nccl/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml",
                "p4d.24xlarge",
            ),
        ] {
            assert_eq!(ofi(line), Some(OfiEvent::Platform(platform)), "{line}");
        }
        assert_eq!(
            ofi("NET/OFI Only EFA provider is supported"),
            Some(OfiEvent::ProviderMissing)
        );
        assert_eq!(
            ofi(
                "NET/OFI No viable endpoint found for TCP provider. Try and relax the filters using OFI_NCCL_USE_IPV6_TCP or OFI_NCCL_EXCLUDE_TCP_IF environment variables"
            ),
            Some(OfiEvent::ProviderMissing)
        );
        // Init failures of every release: fi_fabric on the provider found, 1.21's caught
        // exceptions; a libfabric older than the EFA support needs (1.13.0+: 1.22.0).
        for line in [
            "NET/OFI Couldn't open a fabric provider. RC: -61, ERROR: No data available",
            "NET/OFI Couldn't open a fabric provider using ofiutils helper. RC: -61, ERROR: No data available",
            "NET/OFI Couldn't create fabric. RC: -12, ERROR: Cannot allocate memory",
            "NET/OFI Caught exception in plugin init: fi_getinfo failed",
            // 1.7+: a protocol the user or platform chose; 1.13+: the one selected.
            "NET/OFI Failed to initialize sendrecv protocol",
            "NET/OFI Failed to initialize rdma protocol",
            "NET/OFI Failed to initialize RDMA protocol",
            "NET/OFI Failed to initialize RDMA protocol [repeated 7x across cluster]",
            // 1.13+: no protocol worked; 1.7+: the plugin's CUDA setup.
            "NET/OFI Unable to find a protocol that worked.  Failing initialization.",
            "NET/OFI CUDA initialization failed.",
        ] {
            assert_eq!(ofi(line), Some(OfiEvent::InitFailed), "{line}");
        }
        assert_eq!(
            ofi("NET/OFI Caught exception in plugin connect: reset"),
            None
        );
        assert_eq!(
            ofi("NET/OFI Couldn't create domain. RC: -12, ERROR: x"),
            None
        );
        assert_eq!(
            ofi("NET/OFI Using Libfabric version 2.3"),
            Some(OfiEvent::LibfabricVersion("2.3"))
        );
        assert_eq!(
            ofi("NET/OFI EFA provider requires at least libfabric version 1.22.0."),
            Some(OfiEvent::LibfabricTooOld("1.22.0"))
        );
        assert_eq!(
            ofi("NET/OFI GDR disabled on GDR-supported instance type p4d.24xlarge"),
            Some(OfiEvent::GdrOff)
        );
    }
}
