//! Step 3 of the pipeline: fold events into what we know per process (`host:pid`), per rank
//! (a process's CUDA device) and per communicator.
//!
//! Selection facts (NCCL version, plugin, provider, NICs) belong to a process: one process can
//! drive several GPUs (nccl-tests `-g 2`). Connections and communicator membership belong to a
//! rank. Every collection is capped so memory stays bounded whatever the input: the first
//! evidence for a fact is kept, later repeats only count.

mod model;

pub use model::*;

use std::collections::HashMap;

use super::analysis::Evidence;
use super::event::{Conn, Event, IbDevice, InitLine, Link, Needle, OfiEvent, version_number};

/// Records a fact the first time only; `value` is built only then (no allocation on the
/// thousands of repeats).
fn set_once<T>(slot: &mut Option<Fact<T>>, value: impl FnOnce() -> T, seen: &Seen) {
    if slot.is_none() {
        *slot = Some(Fact {
            value: value(),
            evidence: seen.evidence(),
        });
    }
}

/// A 64-bit hash of a text, to recognise one seen before (a collision is as likely as
/// 2^-64 per pair).
pub fn text_hash(text: &str) -> u64 {
    text_hash_bytes(text.as_bytes())
}

/// `text_hash` of bytes.
pub fn text_hash_bytes(bytes: &[u8]) -> u64 {
    std::hash::BuildHasher::hash_one(&foldhash::fast::FixedState::with_seed(0), bytes)
}

/// Once a log shows a few hundred processes or ranks, room for `cap` of them at once: growing
/// by doubling would copy every entry again and touch twice the memory, while reserved pages
/// that are never written cost nothing.
fn room_for_all<T>(items: &mut Vec<T>, cap: usize) {
    if items.len() == items.capacity() && items.len() >= 256 && items.len() < cap {
        items.reserve_exact(cap - items.len());
    }
}

/// Processes whose host name came in more than one spelling (garbled lines): torn or glued
/// lines are rare, and a log full of them is garbled beyond this repair.
const MAX_GARBLED: usize = 64;
/// Spellings kept per such process.
const MAX_SPELLINGS: usize = 8;

#[derive(Debug, Default)]
pub struct Facts {
    /// Names of the sources, shared by their evidence (one allocation per source, not per
    /// piece of evidence: a big job keeps hundreds of thousands of them).
    pub sources: Vec<std::sync::Arc<str>>,
    pub processes: Vec<Process>,
    pub ranks: Vec<Rank>,
    process_index: HashMap<String, usize, foldhash::fast::RandomState>,
    /// Processes by pid (at most 16 each), to recognise garbled host names.
    pid_index: HashMap<u32, Vec<usize>, foldhash::fast::RandomState>,
    /// How many processes go by each host name (at most `MAX_PROCESSES` names): a torn name
    /// that a process dropped for its whole one no longer counts as another's.
    host_names: HashMap<String, u32, foldhash::fast::RandomState>,
    /// The host spellings of processes seen under more than one (at most `MAX_GARBLED`
    /// processes): which one is the name is decided again as other processes show theirs.
    garbled: Vec<(usize, Vec<String>)>,
    /// Keyed by `commId`.
    pub groups: HashMap<u64, CommGroup, foldhash::fast::RandomState>,
    /// Line buffers of completed inits, reused for new ones (no allocation per `Init START`).
    spare_marks: Vec<LineMark>,
    /// Version lines without NCCL's prefix (rank 0 only up to 2.21, PyTorch error texts).
    pub job_versions: Vec<Fact<String>>,
    pub header_hosts: Vec<String>,
    /// Sources whose wrappers number a process's lines differently (line numbers, not
    /// launcher ranks): no launcher rank is taken from them (at most `MAX_GARBLED`).
    pub tags_vary_in: Vec<usize>,
    /// nccl-tests' rank table: the distinct rank numbers it lists (a log of several tests
    /// prints the table once per test), and the highest.
    pub header_ranks: u32,
    pub header_max_rank: Option<u32>,
    /// Those rank numbers, sorted (at most `MAX_RANKS`).
    header_rank_numbers: Vec<u32>,
    pub header_evidence: Option<Evidence>,
    pub warnings: EvidenceList,
    pub errors: EvidenceList,
    pub no_net_plugin: EvidenceList,
    /// `Bootstrap : no socket interface found` and the like: no interface for NCCL's sockets.
    pub no_interface: EvidenceList,
    /// The network `NCCL_NET` asked for and NCCL did not find (`Error: network X not found.`).
    pub network_not_found: Option<Fact<String>>,
    /// Multi-node NVLink there and unusable: (clique size, whether NCCL stopped), and where.
    pub mnnvl_broken: Option<Fact<(u32, bool)>>,
    pub mnnvl_broken_lines: EvidenceList,
    /// 2.30's own check: ranks see (min, max) network devices; whether NCCL stopped on it.
    pub net_device_mismatch: Option<Fact<(u32, u32, bool)>>,
    pub timeouts: EvidenceList,
    pub libfabric_warnings: EvidenceList,
    pub nccl_records: u64,
    /// The environment the ranks ran in, as the caller knows it (`Options::environment`):
    /// the variables that say which network path was asked for, with `environment` as the
    /// evidence's source.
    pub launch_env: Vec<(String, Fact<String>)>,
    /// `Options::simulated_nodes`: the one host the ranks show is several nodes on purpose.
    pub simulated_nodes: bool,
    /// NCCL's socket layer gave up connecting to a peer: the lines, and the first peer and
    /// error the lines name.
    pub connect_failures: EvidenceList,
    pub connect_failure: Option<(Option<String>, Option<String>)>,
    /// Sources in which Ray folded communicator init lines of several workers into one
    /// (`… - Init START [repeated 14x across cluster]`, at most `MAX_LIST`): there a rank's
    /// missing init line may have been folded away (`Facts::note_folded`).
    pub folded_inits: Vec<usize>,
    /// Sources in which one line holds records of two processes (at most `MAX_GARBLED`):
    /// several processes' output reached one stream in blocks, not lines (`Facts::torn`).
    pub glued_sources: Vec<usize>,
    /// A cap was hit: some processes or details were not tracked.
    pub capped: bool,
    /// IB device lists parsed already: the processes of one host print the same list (and
    /// the hosts of a job the same hardware), and a parse costs thousands of instructions.
    ib_lists: IbLists,
}

/// `net_lines::ib_devices` of the last distinct list texts (at most `IbLists::KEPT`).
#[derive(Debug, Default)]
struct IbLists(Vec<(String, Vec<IbDevice>)>);

impl IbLists {
    const KEPT: usize = 64;

    /// The devices `list` names: what parsing it gives, from a list parsed before if there is
    /// one.
    fn devices(&mut self, list: &str) -> Vec<IbDevice> {
        if let Some((_, devices)) = self.0.iter().find(|(text, _)| text == list) {
            return devices.clone();
        }
        let devices = super::net_lines::ib_devices(list);
        if self.0.len() < Self::KEPT {
            self.0.push((list.to_string(), devices.clone()));
        }
        devices
    }

    /// Notes a verbs port list (`NET/IB : Using [0]mlx5_0:1/IB …`) in `p`'s devices.
    fn merge(&mut self, p: &mut Process, list: &str, seen: &Seen) {
        p.net_init_seen = true;
        let hash = text_hash(list);
        if p.ib_lists_merged.contains(&hash) {
            // Merged already.
        } else if p.ib_devices.is_empty() {
            p.ib_devices = self.devices(list);
            if !p.ib_devices.is_empty() {
                p.ib_devices_evidence = Some(seen.evidence());
            }
            // A list that names no device (`[RO]; OOB eth0`, a layout the parser
            // does not read) gives none the next time too: not parsed again.
            if p.ib_lists_merged.len() < MAX_MERGED_LISTS {
                p.ib_lists_merged.push(hash);
            }
        } else {
            // 2.2/2.3 list one port per line; later lists repeat per communicator.
            for device in self.devices(list) {
                if p.ib_devices.len() < MAX_LIST && !p.ib_devices.contains(&device) {
                    p.ib_devices.push(device);
                }
            }
            if p.ib_lists_merged.len() < MAX_MERGED_LISTS {
                p.ib_lists_merged.push(hash);
            }
        }
    }
}

/// `2.21.5+cuda12.4` → (2, 21).
pub fn release(version: &str) -> Option<(u32, u32)> {
    let mut parts = version_number(version)?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The end of Ray's marker for lines it folded, `[repeated 3x across cluster]`; the searcher
/// is built once (building one per init line cost 3% of a dense log's instructions).
static RAY_FOLDED: Needle = Needle::new(|| memchr::memmem::Finder::new(b"x across cluster]"));

impl Facts {
    /// The launch environment's variables that choose a network path (the rest is not
    /// evidence of anything the logs could show).
    pub fn note_environment(&mut self, environment: &[(String, String)]) {
        const CHOOSING: [&str; 3] = ["FI_PROVIDER", "NCCL_NET", "NCCL_NET_PLUGIN"];
        for (name, value) in environment {
            if CHOOSING.contains(&name.as_str()) && !self.launch_env.iter().any(|(n, _)| n == name)
            {
                let evidence = Evidence::new("environment".into(), 0, format!("{name}={value}"));
                self.launch_env.push((
                    name.clone(),
                    Fact {
                        value: value.clone(),
                        evidence,
                    },
                ));
            }
        }
    }

    /// A variable of the launch environment.
    pub fn launch_env(&self, name: &str) -> Option<&Fact<String>> {
        self.launch_env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
    }

    /// The rank for a record. `key` identifies the process: NCCL's `host:pid` when the prefix
    /// has it, else the source and the wrapper's `tag`. `None` once the process cap is reached.
    pub fn rank_for(
        &mut self,
        key: &str,
        tag: Option<&str>,
        host: Option<&str>,
        pid: Option<u32>,
        dev: Option<u32>,
    ) -> Option<usize> {
        let process = match self.process_index.get(key) {
            Some(&index) => index,
            None if let Some(index) = self.garbled_alias(host, pid) => {
                if self.process_index.len() < 2 * MAX_PROCESSES {
                    self.process_index.insert(key.to_string(), index);
                }
                if let Some(host) = host {
                    self.add_spelling(index, host);
                }
                index
            }
            None => {
                if self.processes.len() >= MAX_PROCESSES {
                    self.capped = true;
                    return None;
                }
                let index = self.processes.len();
                room_for_all(&mut self.processes, MAX_PROCESSES);
                self.processes.push(Process {
                    host: host.map(str::to_string),
                    pid,
                    tag: tag.map(str::to_string),
                    ..Process::default()
                });
                self.process_index.insert(key.to_string(), index);
                if let Some(host) = host {
                    self.count_host(host, 1);
                    // A garbled process that has this spelling too: another process now goes
                    // by it.
                    for entry in 0..self.garbled.len() {
                        if self.garbled[entry].1.iter().any(|name| name == host) {
                            self.settle_host(entry);
                        }
                    }
                }
                if let Some(pid) = pid {
                    let same = self.pid_index.entry(pid).or_default();
                    if same.len() < 16 {
                        same.push(index);
                    }
                }
                index
            }
        };
        let ranks = &self.processes[process].ranks;
        if let Some(&rank) = ranks.iter().find(|&&r| self.ranks[r].dev == dev) {
            return Some(rank);
        }
        if ranks.len() >= MAX_LIST || self.ranks.len() >= MAX_RANKS {
            self.capped = true;
            return None;
        }
        let rank = self.ranks.len();
        room_for_all(&mut self.ranks, MAX_RANKS);
        self.ranks.push(Rank {
            process,
            dev,
            ..Rank::default()
        });
        self.processes[process].ranks.push(rank);
        Some(rank)
    }

    /// Process `index` showed its host name spelled `host` too (`garbled_alias`).
    fn add_spelling(&mut self, index: usize, host: &str) {
        let entry = match self.garbled.iter().position(|(p, _)| *p == index) {
            Some(entry) => entry,
            None if self.garbled.len() < MAX_GARBLED => {
                let first = self.processes[index].host.clone().into_iter().collect();
                self.garbled.push((index, first));
                self.garbled.len() - 1
            }
            None => return,
        };
        let names = &mut self.garbled[entry].1;
        if names.len() < MAX_SPELLINGS && !names.iter().any(|name| name == host) {
            names.push(host.to_string());
        }
        self.settle_host(entry);
    }

    /// Which spelling of a garbled process's host name is the name: the one most other
    /// processes go by (a line torn at the front, `pgds-aihub0007` for `tpgds-aihub0007`, or
    /// text glued in front, `280356ljm` for `ljm`); else the name stays. (A spelling that
    /// the others end with is no better: a torn `23` is that for `worker-23`.)
    fn settle_host(&mut self, entry: usize) {
        let (index, names) = &self.garbled[entry];
        let current = self.processes[*index].host.as_deref();
        let others = |name: &str| {
            let all = self.host_names.get(name).copied().unwrap_or(0);
            all.saturating_sub(u32::from(current == Some(name)))
        };
        let choice = names
            .iter()
            .filter(|name| others(name) > 0)
            .max_by_key(|name| others(name));
        if let Some(choice) = choice
            && Some(choice.as_str()) != current
        {
            let (index, choice) = (*index, choice.clone());
            self.rename_host(index, &choice);
        }
    }

    /// Gives process `index` the host name `host`.
    fn rename_host(&mut self, index: usize, host: &str) {
        if let Some(old) = self.processes[index].host.replace(host.to_string()) {
            self.count_host(&old, -1);
        }
        self.count_host(host, 1);
    }

    /// One process more (`by` 1) or fewer (-1) goes by `host`.
    fn count_host(&mut self, host: &str, by: i32) {
        let room = self.host_names.len() < MAX_PROCESSES;
        match self.host_names.get_mut(host) {
            Some(n) => *n = n.saturating_add_signed(by),
            None if by > 0 && room => {
                self.host_names.insert(host.to_string(), 1);
            }
            None => {}
        }
    }

    /// The wrappers of `source` number lines, not ranks: the launcher ranks taken from it
    /// are dropped, and no more are taken (`scan::Analyzer::check_launcher_rank`).
    pub fn tags_vary(&mut self, source: usize) {
        if self.tags_vary_in.contains(&source) || self.tags_vary_in.len() >= MAX_GARBLED {
            return;
        }
        self.tags_vary_in.push(source);
        for r in &mut self.ranks {
            if self.processes[r.process].source == Some(source) {
                r.launcher_rank = None;
            }
        }
    }

    /// Whether a process has gone by the host name `host`.
    pub fn knows_host(&self, host: &str) -> bool {
        self.host_names.get(host).is_some_and(|&n| n > 0)
    }

    /// A line of `source` held records of two processes: one's line was cut and the other's
    /// written after it (`Facts::torn`).
    pub fn note_glued(&mut self, source: usize) {
        if self.glued_sources.len() < MAX_GARBLED && !self.glued_sources.contains(&source) {
            self.glued_sources.push(source);
        }
    }

    /// Whether the lines of `source` were torn between processes: a line holding records of
    /// two processes, or a process whose host name came glued to or cut from another
    /// process's text. Output written a line at a time never tears a line: processes that
    /// share a stream (a pod's stdout, a job's log file) tear each other's lines only where
    /// their output reaches it in blocks, cut anywhere: C stdio fully buffering a pipe or a
    /// file (4 KiB at a time), or a launcher relaying each process's pipe in fixed-size
    /// reads. There the order of different processes' lines is the order the blocks were
    /// written, not the order things happened, and a process's last lines may still sit in
    /// its buffer or pipe (or be lost with it when the process is killed).
    pub fn torn(&self, source: usize) -> bool {
        self.glued_sources.contains(&source)
            || (self.garbled.iter()).any(|&(p, _)| self.processes[p].source == Some(source))
    }

    /// The one NCCL release, (major, minor), that every version line of the log names: the
    /// release of a process without a version line of its own (up to 2.21 only rank 0
    /// prints one).
    pub fn job_release(&self) -> Option<(u32, u32)> {
        let mut all = (self.processes.iter())
            .filter_map(|p| p.version.as_ref())
            .chain(&self.job_versions)
            .map(|version| release(&version.value));
        let first = all.next()??;
        all.all(|r| r == Some(first)).then_some(first)
    }

    /// Whether the process `key` (`host:pid`) has been seen.
    pub fn knows(&self, key: &str) -> bool {
        self.process_index.contains_key(key)
    }

    /// A process already seen with the same pid whose host name is this one with text glued
    /// in front (`80356ljm` for `ljm`: interleaved output) or cut at the front (`23` for
    /// `worker-23`).
    fn garbled_alias(&self, host: Option<&str>, pid: Option<u32>) -> Option<usize> {
        let (host, pid) = (host?, pid?);
        let related =
            |known: &str| known != host && (host.ends_with(known) || known.ends_with(host));
        self.pid_index.get(&pid)?.iter().copied().find(|&i| {
            self.processes[i].host.as_deref().is_some_and(related)
                // Any spelling it showed before: `03f03fnode01` after `trainingnode01` and
                // `node01`.
                || self
                    .garbled
                    .iter()
                    .any(|(p, names)| *p == i && names.iter().any(|name| related(name)))
        })
    }

    /// Folds one event seen on `rank`.
    pub fn apply(&mut self, rank: usize, event: Event, seen: &Seen) {
        self.nccl_records += 1;
        let r = &mut self.ranks[rank];
        r.last_at = (seen.source_index, seen.line);
        if r.first_at.1 == 0 {
            r.first_at = r.last_at;
        }
        let process = self.ranks[rank].process;
        if let Some(phase) = phase_of(&event)
            // Lines that show bootstrap done come in an order that moved between releases
            // (NVLS's before or after the node count): none moves a rank back.
            && !(phase == Phase::Bootstrapped
                && matches!(
                    self.ranks[rank].phase,
                    Phase::Topology | Phase::Connecting | Phase::Connected
                ))
        {
            self.set_phase(rank, phase, seen);
        }
        let p = &mut self.processes[process];
        p.records += 1;
        p.source.get_or_insert(seen.source_index);
        match event {
            Event::Version(version) => set_once(&mut p.version, || version.to_string(), seen),
            Event::CudaDriver(driver) => {
                p.cuda_driver.get_or_insert_with(|| driver.to_string());
            }
            Event::PluginRequested(name) => {
                p.net_init_seen = true;
                set_once(&mut p.requested_plugin, || name.to_string(), seen);
            }
            Event::PluginNotFound => {
                p.net_init_seen = true;
                p.internal_net.get_or_insert_with(|| seen.evidence());
                // Routine unless a plugin was asked for by name, and not by the idiom that
                // turns plugins off: `NCCL_NET_PLUGIN=none`, which NCCL up to 2.20 turns into
                // the library name `libnccl-net-none.so` before echoing it.
                let requested = p.requested_plugin.as_ref().map(|f| f.value.as_str());
                let off = |name: &str| {
                    name.eq_ignore_ascii_case("none")
                        || name.eq_ignore_ascii_case("libnccl-net-none.so")
                };
                if requested.is_some_and(|name| !name.is_empty() && !off(name)) {
                    push_failure(p, PluginFailure::RequestedNotFound, seen);
                }
            }
            Event::PluginLoaded(name) => {
                p.net_init_seen = true;
                set_once(&mut p.loaded_plugin, || name.to_string(), seen);
            }
            Event::PluginLoadFailed => push_failure(p, PluginFailure::LoadFailed, seen),
            Event::PluginIncompatible => push_failure(p, PluginFailure::Incompatible, seen),
            Event::NetInitialized(name) => {
                p.net_init_seen = true;
                if p.initialized.len() < MAX_LIST && !p.initialized.iter().any(|n| n == name) {
                    p.initialized.push(name.to_string());
                }
            }
            Event::NetInitFailed(name) => {
                p.net_init_seen = true;
                if name == "IB" || name == "Socket" {
                    // NCCL's routine probe of its built-in IB on a host without IB is not a
                    // try; whether IB devices were listed decides later.
                    p.ib_init_failed.get_or_insert_with(|| seen.evidence());
                } else {
                    push_failure(p, PluginFailure::InitFailed, seen);
                }
            }
            Event::NoNetPlugin => {
                push_failure(p, PluginFailure::NoneUsable, seen);
                self.no_net_plugin.push(seen);
            }
            Event::NoInterface => self.no_interface.push(seen),
            Event::NetNotFound(name) => {
                push_failure(p, PluginFailure::NoneUsable, seen);
                self.no_net_plugin.push(seen);
                set_once(&mut self.network_not_found, || name.to_string(), seen);
            }
            Event::UsingNetwork(name) => {
                p.net_init_seen = true;
                let r = &mut self.ranks[rank];
                match &mut r.network {
                    // `Using network` follows `Assigned NET plugin`; the last one wins.
                    Some(fact) if fact.value != name => {
                        *fact = Fact {
                            value: name.to_string(),
                            evidence: seen.evidence(),
                        }
                    }
                    Some(_) => {}
                    None => {
                        r.network = Some(Fact {
                            value: name.to_string(),
                            evidence: seen.evidence(),
                        })
                    }
                }
            }
            Event::IbDevices(list) => self.ib_lists.merge(p, list, seen),
            Event::PluginVerbsDevices { name, list } => {
                set_once(&mut p.self_named, || name.to_string(), seen);
                set_once(&mut p.verbs_plugin, || name.to_string(), seen);
                self.ib_lists.merge(p, list, seen);
            }
            Event::IbNoDevice => {
                p.net_init_seen = true;
                p.ib_no_device = true;
            }
            Event::IbOpenFailed => {
                p.net_init_seen = true;
                p.ib_open_failed.get_or_insert_with(|| seen.evidence());
                self.warnings.push(seen);
            }
            Event::VerbsMissing => {
                p.verbs_missing.get_or_insert_with(|| seen.evidence());
            }
            Event::SocketInterfaces(text) => {
                p.net_init_seen = true;
                let names = || {
                    let list = super::net_lines::socket_interfaces(text);
                    list.into_iter().map(str::to_string).collect()
                };
                set_once(&mut p.socket_interfaces, names, seen);
                if p.address.is_none()
                    && let Some((name, address)) = super::net_lines::first_interface_address(text)
                {
                    p.address = Some((name.to_string(), address.to_string()));
                }
                if p.link_local.is_none() {
                    let hash = text_hash(text) | 1;
                    if p.link_local_checked != hash {
                        p.link_local_checked = hash;
                        let link_local = super::net_lines::link_local_interfaces(text);
                        if !link_local.is_empty() {
                            let value = link_local.into_iter().map(str::to_string).collect();
                            set_once(&mut p.link_local, || value, seen);
                        }
                    }
                }
            }
            Event::BootstrapInterface(text) => {
                // Bootstrap uses the first interface listed.
                let first = text.split_whitespace().next().unwrap_or("");
                let first = first.split_once(']').map_or(first, |(_, rest)| rest);
                let name = super::event::interface_name(first);
                if p.bootstrap_interface.is_none()
                    && let Some((name, address)) = super::net_lines::first_interface_address(text)
                {
                    // The bootstrap's address is the one other hosts connect to.
                    p.address = Some((name.to_string(), address.to_string()));
                }
                set_once(&mut p.bootstrap_interface, || name.to_string(), seen);
                if p.bootstrap_link_local.is_none()
                    && !super::net_lines::link_local_interfaces(first).is_empty()
                {
                    p.bootstrap_link_local
                        .get_or_insert_with(|| seen.evidence());
                }
            }
            Event::GdrNic { enabled } => {
                if !enabled {
                    p.gdr_nic_off.get_or_insert_with(|| seen.evidence());
                }
            }
            // Only as a count of several nodes: under multi-node NVLink NCCL counts a whole
            // clique as one node, and this line does not say whether the communicator is one
            // (the communicator line's `MNNVL 1` does), so `1 nodes` proves nothing here.
            Event::Ofi(OfiEvent::TunerComm { nranks, nnodes }) => {
                let r = &mut self.ranks[rank];
                if nranks > 1 {
                    r.multi_rank_comm = true;
                }
                if nnodes > 1 && r.max_nnodes.as_ref().is_none_or(|f| nnodes > f.value) {
                    r.max_nnodes = Some(Fact {
                        value: nnodes,
                        evidence: seen.evidence(),
                    });
                }
            }
            Event::Ofi(ofi) => self.apply_ofi(process, ofi, seen),
            Event::Env { var, value } => {
                if p.env.len() < MAX_LIST && p.env(var).is_none() {
                    let fact = Fact {
                        value: value.to_string(),
                        evidence: seen.evidence(),
                    };
                    p.env.push((var.to_string(), fact));
                }
            }
            Event::Connection(conn, link) => self.add_connection(rank, conn, link, seen),
            Event::Nvls => {
                let conn = ConnSeen {
                    label: "NVLS".into(),
                    network: None,
                    gdr: false,
                    count: 0,
                    peers: vec![],
                    evidence: seen.evidence(),
                };
                add_conn(&mut self.ranks[rank], conn, &mut self.capped);
            }
            Event::CommNodes {
                comm,
                rank: number,
                nranks,
                nnodes,
                local_ranks,
                local_rank,
                mnnvl,
            } => {
                let r = &mut self.ranks[rank];
                // A split's size and numbering are the sub-communicator's, not the job's.
                let split = r.split_comms.contains(&hex_id(comm));
                // Under multi-node NVLink (`MNNVL 1`, 2.20+) NCCL counts a whole NVLink
                // clique as one node (init.cc: the clique id replaces the host hash), so
                // `nNodes 1` there does not mean one host: host names decide.
                let clique = mnnvl == Some(1);
                if nnodes == 1 && nranks > 1 && !split && !clique {
                    r.whole_comm_one_node = true;
                }
                if clique && nranks > 1 {
                    r.mnnvl.get_or_insert_with(|| seen.evidence());
                }
                if nranks > 1 {
                    r.multi_rank_comm = true;
                }
                if !split && nranks >= r.world.max(1) {
                    r.world = nranks;
                    r.rank = Some(number);
                    r.local_ranks = local_ranks;
                    r.local_rank = local_rank;
                }
                if nranks > 1 && r.max_nnodes.as_ref().is_none_or(|f| nnodes > f.value) {
                    r.max_nnodes = Some(Fact {
                        value: nnodes,
                        evidence: seen.evidence(),
                    });
                }
            }
            Event::CommRanks {
                rank: number,
                nranks,
            } => {
                let r = &mut self.ranks[rank];
                if nranks > 1 {
                    r.multi_rank_comm = true;
                }
                if nranks >= r.world.max(1) {
                    r.world = nranks;
                    r.rank = Some(number);
                }
            }
            Event::RingOrder { ranks } => {
                let r = &mut self.ranks[rank];
                r.ring_ranks = r.ring_ranks.max(ranks);
            }
            Event::PluginSelfNamed { name, connected } => {
                p.net_init_seen = true;
                set_once(&mut p.self_named, || name.to_string(), seen);
                if connected {
                    p.self_named_connected
                        .get_or_insert_with(|| seen.evidence());
                }
            }
            Event::NetTrafficError { ib } => {
                let slot = if ib {
                    &mut p.ib_traffic
                } else {
                    &mut p.socket_traffic
                };
                slot.get_or_insert_with(|| seen.evidence());
                self.warnings.push(seen);
            }
            Event::InitStart(init) => {
                self.note_folded(seen);
                let r = &mut self.ranks[rank];
                if init.split && r.split_comms.len() < MAX_LIST {
                    r.split_comms.push(hex_id(init.comm));
                }
                if init.all_in_one_process {
                    self.ranks[rank]
                        .all_in_one_process
                        .get_or_insert_with(|| seen.evidence());
                }
                let after_bootstrap = init.after_bootstrap == Some(true);
                self.init_started(rank, init, seen);
                // Up to 2.22 the line comes once every rank has checked in.
                if after_bootstrap {
                    self.set_phase(rank, Phase::Bootstrapped, seen);
                }
            }
            Event::InitComplete(init) => {
                self.note_folded(seen);
                if init.all_in_one_process {
                    self.ranks[rank]
                        .all_in_one_process
                        .get_or_insert_with(|| seen.evidence());
                }
                self.init_completed(rank, init, seen)
            }
            Event::Connected { gdr } => {
                if gdr.is_some() {
                    self.ranks[rank].ring_gdr = gdr;
                }
            }
            Event::TunerProbe => {
                p.tuner_probe.get_or_insert_with(|| seen.evidence());
            }
            Event::Breadcrumb { .. } => self.errors.push(seen),
            Event::MnnvlBroken { clique, stopped } => {
                set_once(&mut self.mnnvl_broken, || (clique, stopped), seen);
                self.mnnvl_broken_lines.push(seen);
            }
            Event::NetDeviceMismatch { min, max, stopped } => {
                set_once(&mut self.net_device_mismatch, || (min, max, stopped), seen);
            }
            Event::PeerVersion(version) => {
                self.warnings.push(seen);
                self.add_job_version(version, seen);
            }
            Event::SocketConnectFailed { peer, error } => {
                self.connect_failures.push(seen);
                // The first failure that names its peer, else the first.
                let named = (self.connect_failure.as_ref()).is_some_and(|(p, _)| p.is_some());
                if !named && (self.connect_failure.is_none() || peer.is_some()) {
                    self.connect_failure =
                        Some((peer.map(str::to_string), error.map(str::to_string)));
                }
                self.warnings.push(seen);
            }
            Event::VerbsCallFailed { call, detail } => {
                if p.verbs_failures.len() < MAX_LIST
                    && !p.verbs_failures.iter().any(|(c, _)| c == call)
                {
                    let fact = Fact {
                        value: detail.map(str::to_string),
                        evidence: seen.evidence(),
                    };
                    p.verbs_failures.push((call.to_string(), fact));
                }
                self.warnings.push(seen);
            }
            Event::Warn => self.warnings.push(seen),
            Event::TreeBranches => {
                self.ranks[rank]
                    .tree_branches
                    .get_or_insert_with(|| seen.evidence());
            }
            Event::Destroyed | Event::Bootstrapped | Event::Topology | Event::Presence => {}
        }
    }

    fn apply_ofi(&mut self, process: usize, event: OfiEvent, seen: &Seen) {
        let p = &mut self.processes[process];
        p.net_init_seen = true;
        match event {
            OfiEvent::PluginVersion(version) => {
                p.ofi_version.get_or_insert_with(|| version.to_string());
            }
            OfiEvent::Provider {
                provider,
                fabric,
                nics,
            } => {
                set_once(&mut p.ofi_provider, || provider.to_string(), seen);
                if let Some(fabric) = fabric {
                    p.ofi_fabric.get_or_insert_with(|| fabric.to_string());
                }
                if nics.is_some() {
                    p.ofi_nics = nics;
                }
            }
            OfiEvent::ProviderMissing => push_failure(p, PluginFailure::OfiProviderMissing, seen),
            OfiEvent::InitFailed => push_failure(p, PluginFailure::OfiInitFailed, seen),
            OfiEvent::LibfabricVersion(version) => {
                p.ofi_libfabric.get_or_insert_with(|| version.to_string());
            }
            OfiEvent::LibfabricTooOld(needed) => {
                push_failure(p, PluginFailure::OfiLibfabricTooOld, seen);
                p.ofi_libfabric_needed
                    .get_or_insert_with(|| needed.to_string());
            }
            OfiEvent::GdrOff => {
                p.ofi_gdr_off.get_or_insert_with(|| seen.evidence());
            }
            OfiEvent::Platform(platform) => {
                set_once(&mut p.ofi_platform, || platform.to_string(), seen);
            }
            OfiEvent::ProviderFilter(filter) => {
                p.ofi_filter.get_or_insert_with(|| filter.to_string());
            }
            // Per rank: `Facts::apply`.
            OfiEvent::TunerComm { .. } => {}
            OfiEvent::TrafficError { detail } => {
                set_once(&mut p.ofi_traffic, || detail.map(str::to_string), seen);
                self.warnings.push(seen);
            }
            OfiEvent::EfaRuntime => {
                p.efa_runtime.get_or_insert_with(|| seen.evidence());
                self.warnings.push(seen);
            }
        }
    }

    fn add_connection(&mut self, rank: usize, conn: Conn, link: Option<Link>, seen: &Seen) {
        let r = &mut self.ranks[rank];
        if let (Conn::P2p("P2P/direct pointer"), Some(link)) = (conn, link) {
            add_peer(&mut r.same_process_ranks, link.from);
            add_peer(&mut r.same_process_ranks, link.to);
        }
        // The other end, when the line names this rank at one end (lines of a smaller
        // communicator use other numbers and may name neither).
        let peer = link.and_then(|l| match r.rank {
            Some(me) if l.from == me && l.to != me => Some(l.to),
            Some(me) if l.to == me && l.from != me => Some(l.from),
            _ => None,
        });
        if r.rank.is_none()
            && let Some(link) = link
            && r.printed_links.len() < MAX_PEERS
        {
            let (printer, peer) = link.printer_and_peer();
            let net = matches!(conn, Conn::Net { .. });
            let printed = PrintedLink { printer, peer, net };
            if !r.printed_links.contains(&printed) {
                r.printed_links.push(printed);
            }
        }
        let (label, network, gdr) = match conn {
            Conn::P2p(kind) => (kind, None, false),
            Conn::Shm => ("SHM", None, false),
            Conn::Mnnvl => ("P2P/MNNVL", None, false),
            Conn::Net { name, gdr } => ("NET", Some(name), gdr),
            Conn::CollNet { name, gdr } => ("COLLNET", Some(name), gdr),
        };
        // Hot path: most connection lines repeat a kind already seen.
        let known = r.conns.iter_mut().find(|c| {
            c.network.as_deref() == network
                && if network.is_some() {
                    c.label.starts_with(label)
                } else {
                    c.label == label
                }
        });
        if let Some(known) = known {
            known.count += 1;
            known.gdr |= gdr;
            if let Some(peer) = peer {
                add_peer(&mut known.peers, peer);
            }
            return;
        }
        let label = match network {
            Some(name) => format!("{label}/{name}"),
            None => label.to_string(),
        };
        let conn = ConnSeen {
            label,
            network: network.map(str::to_string),
            gdr,
            count: 1,
            peers: peer.into_iter().collect(),
            evidence: seen.evidence(),
        };
        add_conn(r, conn, &mut self.capped);
    }

    /// A version the job runs that no process's own version line showed (at most 16).
    pub fn add_job_version(&mut self, version: &str, seen: &Seen) {
        if self.job_versions.len() < 16 && !self.job_versions.iter().any(|v| v.value == version) {
            self.job_versions.push(Fact {
                value: version.to_string(),
                evidence: seen.evidence(),
            });
        }
    }

    fn set_phase(&mut self, rank: usize, phase: Phase, seen: &Seen) {
        let r = &mut self.ranks[rank];
        if r.phase == phase && r.phase_mark.is_some() {
            return;
        }
        r.phase = phase;
        // Phases flip many times per communicator: reuse the text buffer.
        r.phase_mark.get_or_insert_with(LineMark::default).set(seen);
    }

    /// The line that moved `rank` into its last phase.
    pub fn phase_evidence(&self, rank: &Rank) -> Option<Evidence> {
        rank.phase_mark
            .as_ref()
            .map(|mark| self.mark_evidence(mark))
    }

    pub fn mark_evidence(&self, mark: &LineMark) -> Evidence {
        let source = self
            .sources
            .get(mark.source)
            .cloned()
            .unwrap_or_else(|| "".into());
        let seen = Seen {
            source: &source,
            source_index: mark.source,
            line: mark.line,
            raw: &mark.raw,
        };
        seen.evidence()
    }

    /// Ray's log deduplication (on by default since Ray 2.5) prints the first of several
    /// workers' lines that are the same once every word holding a digit is taken out, and
    /// later one copy with `[repeated Nx across cluster]` for the rest: communicator init
    /// lines differ only in such words (comm, rank, device, bus id), so most workers' own go
    /// unprinted. Noted for the source of an init line that carries the marker.
    fn note_folded(&mut self, seen: &Seen) {
        if self.folded_inits.len() < MAX_LIST
            && !self.folded_inits.contains(&seen.source_index)
            && RAY_FOLDED.find(seen.raw).is_some()
        {
            self.folded_inits.push(seen.source_index);
        }
    }

    fn init_started(&mut self, rank: usize, init: InitLine, seen: &Seen) {
        let comm_id = init.comm_id.map(hex_id);
        if self.ranks[rank].open_inits.len() >= MAX_OPEN_INITS {
            self.capped = true;
        } else {
            let mut mark = self.spare_marks.pop().unwrap_or_default();
            mark.set(seen);
            self.ranks[rank].open_inits.push(OpenInit {
                comm: hex_id(init.comm),
                comm_id,
                nranks: init.nranks,
                mark,
                after_bootstrap: init.after_bootstrap,
            });
        }
        let r = &mut self.ranks[rank];
        if let (Some(number), Some(nranks), false) = (init.rank, init.nranks, init.split)
            && nranks >= r.world.max(1)
        {
            r.world = nranks;
            r.rank = Some(number);
        }
        let Some(id) = comm_id else { return };
        if !self.groups.contains_key(&id) && self.groups.len() >= MAX_COMM_GROUPS {
            self.capped = true;
            return;
        }
        let group = self.groups.entry(id).or_default();
        group.nranks = group.nranks.or(init.nranks);
        if group.ranks.len() < MAX_RANKS_PER_GROUP {
            group.ranks.insert(rank);
        }
    }

    fn init_completed(&mut self, rank: usize, init: InitLine, seen: &Seen) {
        let comm = hex_id(init.comm);
        let r = &mut self.ranks[rank];
        r.completed_inits += 1;
        if let Some(at) = r.open_inits.iter().position(|open| open.comm == comm) {
            let done = r.open_inits.swap_remove(at);
            if self.spare_marks.len() < MAX_OPEN_INITS {
                self.spare_marks.push(done.mark);
            }
        }
        if let (Some(number), Some(nranks), false) = (init.rank, init.nranks, init.split)
            && nranks >= r.world.max(1)
        {
            r.world = nranks;
            r.rank = Some(number);
        }
        if let Some(group) = init.comm_id.and_then(|id| self.groups.get_mut(&hex_id(id))) {
            group.completed = true;
            group.last_completed_at = group.last_completed_at.max((seen.source_index, seen.line));
        }
    }

    /// An nccl-tests `# Rank N ... Pid P on HOST device D` header line.
    pub fn header_rank(&mut self, number: u32, host: &str, pid: u32, dev: u32, seen: &Seen) {
        self.header_evidence.get_or_insert_with(|| seen.evidence());
        if self.header_hosts.len() < MAX_PROCESSES && !self.header_hosts.iter().any(|h| h == host) {
            self.header_hosts.push(host.to_string());
        }
        if let Err(at) = self.header_rank_numbers.binary_search(&number)
            && self.header_rank_numbers.len() < MAX_RANKS
        {
            self.header_rank_numbers.insert(at, number);
            self.header_ranks = self.header_ranks.saturating_add(1);
        }
        self.header_max_rank = self.header_max_rank.max(Some(number));
        let key = format!("{host}:{pid}");
        if let Some(rank) = self.rank_for(&key, None, Some(host), Some(pid), Some(dev)) {
            let r = &mut self.ranks[rank];
            r.rank.get_or_insert(number);
        }
    }
}

fn add_conn(rank: &mut Rank, conn: ConnSeen, capped: &mut bool) {
    if rank.conns.len() < MAX_CONNECTION_KINDS {
        rank.conns.push(conn);
    } else {
        *capped = true;
    }
}

/// Keeps `peers` sorted and bounded.
fn add_peer(peers: &mut Vec<u32>, peer: u32) {
    if let Err(at) = peers.binary_search(&peer)
        && peers.len() < MAX_PEERS
    {
        peers.insert(at, peer);
    }
}

fn push_failure(p: &mut Process, failure: PluginFailure, seen: &Seen) {
    p.net_init_seen = true;
    if p.plugin_failures.len() < MAX_EVIDENCE {
        p.plugin_failures.push((failure, seen.evidence()));
    }
}

fn phase_of(event: &Event) -> Option<Phase> {
    Some(match event {
        Event::Version(_) | Event::CudaDriver(_) => Phase::Started,
        Event::PluginRequested(_)
        | Event::PluginNotFound
        | Event::PluginLoadFailed
        | Event::PluginLoaded(_)
        | Event::NetInitialized(_)
        | Event::NetInitFailed(_)
        | Event::UsingNetwork(_)
        | Event::IbDevices(_)
        | Event::PluginVerbsDevices { .. }
        | Event::IbNoDevice
        | Event::SocketInterfaces(_)
        | Event::Ofi(OfiEvent::PluginVersion(_) | OfiEvent::Provider { .. }) => Phase::NetInit,
        Event::InitStart(_) => Phase::InitStart,
        Event::Bootstrapped => Phase::Bootstrapped,
        Event::CommNodes { .. } | Event::Topology | Event::TreeBranches => Phase::Topology,
        Event::Connection(..) => Phase::Connecting,
        Event::InitComplete(_) => Phase::InitComplete,
        Event::Connected { .. } => Phase::Connected,
        Event::Destroyed => Phase::Destroyed,
        Event::NoNetPlugin
        | Event::NoInterface
        | Event::NetNotFound(_)
        | Event::NetDeviceMismatch { stopped: true, .. }
        | Event::MnnvlBroken { stopped: true, .. }
        | Event::PeerVersion(_)
        | Event::Breadcrumb { .. }
        | Event::Warn
        | Event::VerbsCallFailed { .. }
        | Event::SocketConnectFailed { .. }
        | Event::NetTrafficError { .. }
        | Event::Ofi(OfiEvent::TrafficError { .. }) => Phase::Error,
        _ => return None,
    })
}
