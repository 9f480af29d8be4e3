//! The events a record can be classified into (see `classify`), generic over how their text
//! is held.

/// An event whose text borrows from the message.
pub type Event<'a> = EventOf<&'a str>;
pub type OfiEvent<'a> = OfiEventOf<&'a str>;
pub type Conn<'a> = ConnOf<&'a str>;
pub type InitLine<'a> = InitLineOf<&'a str>;

/// What one NCCL record says. `S` is the text type: `&str` while classifying, and a place
/// in the message (`memo::Offset`) in the memo and while a batch moves between threads
/// (`frame::batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOf<S> {
    /// `NCCL version 2.23.4+cuda12.6` (§2); the `+cuda` part is dropped.
    Version(S),
    CudaDriver(S),
    /// `NET/Plugin: Plugin name set by env to X` or `NCCL_NET_PLUGIN set by environment to X`.
    PluginRequested(S),
    /// The routine "no external plugin" lines of every NCCL release (§3). A failure only when
    /// a plugin was requested by name.
    PluginNotFound,
    /// A plugin library NCCL found and the dynamic loader could not load: `dlopen` names a
    /// library it needs as missing, a symbol version or symbol as not found, a wrong ELF class
    /// (§3, `net_lines::dlopen_error`). NCCL goes on with its built-in transports.
    PluginLoadFailed,
    /// `Loaded net plugin X (vN)`, `P2P plugin IBext`: an external plugin library loaded.
    PluginLoaded(S),
    /// Every `ncclNetPlugin_*` symbol probe failed: the library is unusable (§3).
    PluginIncompatible,
    /// 2.27+: `Initialized NET plugin X`.
    NetInitialized(S),
    /// 2.28+: `Failed to initialize NET plugin X`.
    NetInitFailed(S),
    /// WARN `Failed to initialize any NET plugin`: NCCL cannot run at all.
    NoNetPlugin,
    /// WARN `Bootstrap : no socket interface found`, `NET/Socket : no interface found`,
    /// `NET/Socket : No usable listening interface found` (every release), 2.26+ `no device
    /// found matching …, verify NCCL_OOB_NET_IFNAME`: no network interface NCCL may use for its
    /// sockets (usually `NCCL_SOCKET_IFNAME` naming one the pod lacks).
    NoInterface,
    /// WARN `Error: network X not found.` (2.10–2.26): `NCCL_NET` names a network that no
    /// plugin or built-in transport provides, so communicator init fails.
    NetNotFound(S),
    /// `Using network X`, `Assigned NET plugin X to comm`, 2.3 `Using internal Network X`.
    UsingNetwork(S),
    /// `NET/IB : Using [0]mlx5_0:1/IB ...`: the device list text, parsed by
    /// `net_lines::ib_devices` when first stored; it lists nothing on a host without IB
    /// (`NET/IB : Using [RO]; OOB eth0` after `No device found`).
    IbDevices(S),
    IbNoDevice,
    /// WARN `NET/IB : Unable to open device mlx5_0`: the device exists, opening it failed.
    IbOpenFailed,
    /// `Failed to open libibverbs.so`.
    VerbsMissing,
    /// `NET/Socket : Using [0]eth0:10.0.0.1<0> [1]...` (also 2.3 `NET : Using interface`):
    /// the list text, parsed by `net_lines::socket_interfaces` when first stored.
    SocketInterfaces(S),
    /// `Bootstrap : Using eth0:10.0.0.1<0>` (or `[0]eth0:...`): bootstrap only, not a
    /// transport; the text after `Using`.
    BootstrapInterface(S),
    /// `NET/<name> : GPU Direct RDMA Enabled|Disabled for HCA ...` (§4.3).
    GdrNic {
        enabled: bool,
    },
    Ofi(OfiEventOf<S>),
    /// `NCCL_X set by environment to V` (§4.3); explains a choice, proves nothing.
    Env {
        var: S,
        value: S,
    },
    /// A per-connection line (§5): the authoritative transport evidence, with the two NCCL
    /// ranks it joins when the line names them (`3[0] -> 0[0]`).
    Connection(ConnOf<S>, Option<Link>),
    /// `NVLS comm 0x...`: this communicator uses NVLink SHARP.
    Nvls,
    /// `comm 0x... rank R nRanks N nNodes K localRanks L localRank l ...` (2.20+, §6).
    CommNodes {
        comm: S,
        rank: u32,
        nranks: u32,
        nnodes: u32,
        /// Ranks on this rank's node, and its index among them (NCCL's view of the layout).
        local_ranks: Option<u32>,
        local_rank: Option<u32>,
        /// `MNNVL 1`: the communicator spans a multi-node NVLink domain (GB200/GB300 NVL72).
        mnnvl: Option<u32>,
    },
    /// `rank 0 nranks 8` (2.3), `comm 0x.. rank 5 nranks 6` (2.3/2.4): a rank's place in a
    /// communicator, without `nNodes`.
    CommRanks {
        rank: u32,
        nranks: u32,
    },
    InitStart(InitLineOf<S>),
    InitComplete(InitLineOf<S>),
    Destroyed,
    /// A ring listing `Channel 00/12 :    0   3   2   1` (graph/rings.cc, 2.5+; `Ring 00 :` in
    /// 2.4): every rank of the communicator in ring order, so `ranks` is its size.
    RingOrder {
        ranks: u32,
    },
    /// A plugin naming itself in its own lines (`NET/FastSocket : ...`,
    /// `NET/GPUDirectTCPX : ...`); `connected` when the line reports a connection made,
    /// which happens only for NET connections.
    PluginSelfNamed {
        name: S,
        connected: bool,
    },
    /// A plugin built on NCCL's IB verbs code listing its ports in NCCL's own form
    /// (`NET/gIB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:…`): the network `name` is IB
    /// verbs, and `list` gives each port's link layer.
    PluginVerbsDevices {
        name: S,
        list: S,
    },
    /// Traffic errors that only a network connection produces: `NET/IB : Got completion
    /// from peer ...` (the IB verbs transport carried data) or `NET/Socket : socket progress
    /// error`. `ib`: which of the two.
    NetTrafficError {
        ib: bool,
    },
    /// The rank's bootstrap finished: 2.23+ `Bootstrap timings total ...` (bootstrap.cc, at
    /// the end of `bootstrapInit`), 2.18–2.21 `bootstrapSplit: ... - DONE`. The root hands a
    /// rank its ring neighbour only once every rank of the communicator has checked in, so
    /// a rank past this point shows that all of them started.
    Bootstrapped,
    /// NCCL's socket layer gave up connecting to `peer` (`10.0.0.2<43215>`) with `error`.
    SocketConnectFailed {
        peer: Option<S>,
        error: Option<S>,
    },
    /// A verbs call failed (NCCL's verbs wrapper, a WARN): `call` is the verbs function
    /// (`ibv_reg_mr`, `ibv_modify_qp`, ...), `detail` the error as printed.
    VerbsCallFailed {
        call: S,
        detail: Option<S>,
    },
    /// Ring/tree layout lines: the rank reached topology setup.
    Topology,
    /// `Trees [0] 5/-1/-1->4->3 [1] ...` (2.5+; 2.4: `[0] 3->4->5/-1/-1`, the children last)
    /// where some channel gives this rank two or more children. Inside a node NCCL's tree is a
    /// chain (one child at most); a second child is a rank on another node, linked by the
    /// tree between nodes.
    TreeBranches,
    /// `Connected all rings[, use ring PXN x GDR y]`, `Connected all trees`, ...
    Connected {
        gdr: Option<bool>,
    },
    /// 2.30 `Detected mixed local Net device counts across ranks (min 3, max 4).`: ranks see
    /// different numbers of network devices (a node short of a NIC). As a WARN, NCCL
    /// `stopped` (`Set NCCL_IGNORE_NET_MISMATCH=1 to continue.`); as INFO it went on.
    NetDeviceMismatch {
        min: u32,
        max: u32,
        stopped: bool,
    },
    /// 2.26+ WARN `MNNVL (cliqueSize 72) is available but not working on this system. Check
    /// the IMEX … configuration … Set NCCL_MNNVL_ENABLE=0 to ignore this issue.` (2.27+;
    /// `stopped`) or `… not supported on this system. Check the IMEX configuration.` (2.26):
    /// multi-node NVLink is there and unusable, so init fails or traffic takes the network.
    MnnvlBroken {
        clique: u32,
        stopped: bool,
    },
    /// 2.30 WARN `NCCL version mismatch with remote peer %s (local: %s, remote %s)`: the
    /// remote's version, from a host whose own lines may not be in the log.
    PeerVersion(S),
    /// `init.cc:421 -> 5`: an error propagating up NCCL's call stack (§1.1).
    Breadcrumb {
        code: u32,
    },
    /// 2.22–2.25: `TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.` means some library
    /// (usually a net plugin) is on the library path (§3).
    TunerProbe,
    /// Any other NCCL WARN.
    Warn,
    /// A record with no evidence: its rank exists.
    Presence,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbDevice {
    pub name: String,
    /// `IB`, `RoCE`, `UNSPECIFIED`: the only per-device RoCE-vs-IB evidence.
    pub link_layer: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfiEventOf<S> {
    /// `Initializing aws-ofi-nccl X` / `Using aws-ofi-nccl X`.
    PluginVersion(S),
    Provider {
        provider: S,
        fabric: Option<S>,
        nics: Option<u32>,
    },
    /// No usable libfabric provider (no EFA device in the container, wrong FI_PROVIDER).
    ProviderMissing,
    /// The plugin gave up initialising (§7 failure messages).
    InitFailed,
    /// `EFA provider requires at least libfabric version 1.22.0.` (1.8.0+; 1.18.0 before
    /// 1.13.0): the libfabric it loaded is older than the EFA support it was built for.
    LibfabricTooOld(S),
    /// `Using Libfabric version 1.21` (1.8.0+): the libfabric the plugin loaded.
    LibfabricVersion(S),
    /// `disabling GDR`, `GDR not supported`: EFA without GPUDirect RDMA.
    GdrOff,
    /// Runtime text that only an EFA endpoint produces (`fi_addr_efa`, `EFA device`).
    EfaRuntime,
    /// `Setting provider_filter to efa` (1.6+ on AWS): only this provider can be selected.
    ProviderFilter(S),
    /// `Running on p4d.24xlarge platform, …` (AWS builds 1.1.5+; `P4d` in 1.1.5): the EC2
    /// instance type the plugin's platform table matched.
    Platform(S),
    /// A request the plugin posted completed with an error (every release since 1.4:
    /// `Request 0x… completed with error. RC: -5. Error: 5 (Input/output error). …`, `Remote
    /// write completed with error…`, 1.21's `Request 0x… (send) completed with error: err: …`):
    /// a NET connection over the provider failed while it carried data. `detail`: the error
    /// as printed, if the line has it.
    TrafficError { detail: Option<S> },
    /// 1.13+ tuner: `[Model |Region ]Tuner init[ (platform N)]: comm with R ranks and N
    /// nodes.`, NCCL's own `nRanks` and `nNodes` of a communicator, handed to the tuner.
    TunerComm { nranks: u32, nnodes: u32 },
}

/// The NCCL ranks at the two ends of a connection line, as printed (`from -> to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub from: u32,
    pub to: u32,
    /// A `[receive]` line: printed by the rank on the right.
    pub receive: bool,
}

impl Link {
    /// The rank that printed the line and the one at the other end, in the numbering of the
    /// line's communicator. NCCL prints a `[send]` line where the sender sets up and a
    /// `[receive]` line where the receiver does (transport/net.cc, every release); P2P and
    /// SHM lines have no direction and are printed by the sender (p2p.cc, shm.cc).
    pub fn printer_and_peer(self) -> (u32, u32) {
        if self.receive {
            (self.to, self.from)
        } else {
            (self.from, self.to)
        }
    }
}

/// What a per-connection line says carried the link (§5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnOf<S> {
    /// `P2P/IPC`, `P2P/CUMEM`, `P2P/direct pointer`, ...: label without `/read` etc.
    P2p(S),
    Shm,
    /// `P2P/MNNVL`: NVLink across hosts (NVL72-class), not NET.
    Mnnvl,
    Net {
        name: S,
        gdr: bool,
    },
    CollNet {
        name: S,
        gdr: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitLineOf<S> {
    pub comm: S,
    pub rank: Option<u32>,
    pub nranks: Option<u32>,
    pub comm_id: Option<S>,
    /// `ncclCommInitAll comm ...` (2.23+ names the API): one process created every rank of
    /// the communicator, so they all share one host.
    pub all_in_one_process: bool,
    /// `ncclCommSplit comm ... parent 0x..` (2.23+ names the API): a sub-communicator, whose
    /// `nNodes 1` says nothing about the job.
    pub split: bool,
    /// Whether NCCL printed this `Init START` once bootstrap was done, by the line's form
    /// (`comm_line`); `None` where the form is that of releases on either side.
    pub after_bootstrap: Option<bool>,
}

impl<S> EventOf<S> {
    /// The same event with every text `s` replaced by `f(s)`.
    pub fn map<T>(self, f: &mut impl FnMut(S) -> T) -> EventOf<T> {
        use EventOf::*;
        match self {
            Version(s) => Version(f(s)),
            CudaDriver(s) => CudaDriver(f(s)),
            PluginRequested(s) => PluginRequested(f(s)),
            PluginNotFound => PluginNotFound,
            PluginLoadFailed => PluginLoadFailed,
            PluginLoaded(s) => PluginLoaded(f(s)),
            PluginIncompatible => PluginIncompatible,
            NetInitialized(s) => NetInitialized(f(s)),
            NetInitFailed(s) => NetInitFailed(f(s)),
            NoNetPlugin => NoNetPlugin,
            NoInterface => NoInterface,
            NetNotFound(s) => NetNotFound(f(s)),
            UsingNetwork(s) => UsingNetwork(f(s)),
            IbDevices(s) => IbDevices(f(s)),
            IbNoDevice => IbNoDevice,
            IbOpenFailed => IbOpenFailed,
            VerbsMissing => VerbsMissing,
            SocketInterfaces(s) => SocketInterfaces(f(s)),
            BootstrapInterface(s) => BootstrapInterface(f(s)),
            GdrNic { enabled } => GdrNic { enabled },
            Ofi(ofi) => Ofi(ofi.map(f)),
            Env { var, value } => Env {
                var: f(var),
                value: f(value),
            },
            Connection(conn, link) => Connection(conn.map(f), link),
            Nvls => Nvls,
            CommNodes {
                comm,
                rank,
                nranks,
                nnodes,
                local_ranks,
                local_rank,
                mnnvl,
            } => CommNodes {
                comm: f(comm),
                rank,
                nranks,
                nnodes,
                local_ranks,
                local_rank,
                mnnvl,
            },
            CommRanks { rank, nranks } => CommRanks { rank, nranks },
            RingOrder { ranks } => RingOrder { ranks },
            PluginSelfNamed { name, connected } => PluginSelfNamed {
                name: f(name),
                connected,
            },
            PluginVerbsDevices { name, list } => PluginVerbsDevices {
                name: f(name),
                list: f(list),
            },
            NetTrafficError { ib } => NetTrafficError { ib },
            InitStart(init) => InitStart(init.map(f)),
            InitComplete(init) => InitComplete(init.map(f)),
            Destroyed => Destroyed,
            Bootstrapped => Bootstrapped,
            SocketConnectFailed { peer, error } => SocketConnectFailed {
                peer: peer.map(&mut *f),
                error: error.map(f),
            },
            VerbsCallFailed { call, detail } => VerbsCallFailed {
                call: f(call),
                detail: detail.map(f),
            },
            Topology => Topology,
            TreeBranches => TreeBranches,
            Connected { gdr } => Connected { gdr },
            NetDeviceMismatch { min, max, stopped } => NetDeviceMismatch { min, max, stopped },
            MnnvlBroken { clique, stopped } => MnnvlBroken { clique, stopped },
            PeerVersion(s) => PeerVersion(f(s)),
            Breadcrumb { code } => Breadcrumb { code },
            TunerProbe => TunerProbe,
            Warn => Warn,
            Presence => Presence,
        }
    }
}

impl<S> OfiEventOf<S> {
    pub fn map<T>(self, f: &mut impl FnMut(S) -> T) -> OfiEventOf<T> {
        use OfiEventOf::*;
        match self {
            PluginVersion(s) => PluginVersion(f(s)),
            Provider {
                provider,
                fabric,
                nics,
            } => Provider {
                provider: f(provider),
                fabric: fabric.map(f),
                nics,
            },
            ProviderMissing => ProviderMissing,
            InitFailed => InitFailed,
            LibfabricTooOld(s) => LibfabricTooOld(f(s)),
            LibfabricVersion(s) => LibfabricVersion(f(s)),
            GdrOff => GdrOff,
            EfaRuntime => EfaRuntime,
            ProviderFilter(s) => ProviderFilter(f(s)),
            Platform(s) => Platform(f(s)),
            TunerComm { nranks, nnodes } => TunerComm { nranks, nnodes },
            TrafficError { detail } => TrafficError {
                detail: detail.map(f),
            },
        }
    }
}

impl<S> ConnOf<S> {
    pub fn map<T>(self, f: &mut impl FnMut(S) -> T) -> ConnOf<T> {
        use ConnOf::*;
        match self {
            P2p(s) => P2p(f(s)),
            Shm => Shm,
            Mnnvl => Mnnvl,
            Net { name, gdr } => Net { name: f(name), gdr },
            CollNet { name, gdr } => CollNet { name: f(name), gdr },
        }
    }
}

impl<S> InitLineOf<S> {
    pub fn map<T>(self, f: &mut impl FnMut(S) -> T) -> InitLineOf<T> {
        InitLineOf {
            comm: f(self.comm),
            rank: self.rank,
            nranks: self.nranks,
            comm_id: self.comm_id.map(f),
            all_in_one_process: self.all_in_one_process,
            split: self.split,
            after_bootstrap: self.after_bootstrap,
        }
    }
}
