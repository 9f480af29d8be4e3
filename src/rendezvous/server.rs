//! Rank 0's side: accepts peers in any order, checks the token, hands out the unique id, and
//! watches every connection so a dead peer is noticed while the GPUs are busy.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::protocol::{self, FrameError, Message, PROTOCOL};
use super::shared::{self, runtime};
use super::{Group, HEARTBEAT_TIMEOUT, RdzvError};

pub struct Server {
    rt: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    world_size: u32,
    unique_id: [u8; 128],
}

type Shared = shared::Shared<State>;

#[derive(Default)]
struct State {
    peers: HashMap<u32, Peer>,
    arrivals: HashMap<u64, HashSet<u32>>,
    gathers: HashMap<u64, HashMap<u32, serde_json::Value>>,
    failure: Option<String>,
    said_bye: HashSet<u32>,
}

impl shared::State for State {
    fn failure(&self) -> Option<&String> {
        self.failure.as_ref()
    }
}

struct Peer {
    host: String,
    pid: u32,
    tx: mpsc::UnboundedSender<Message>,
    last_seen: Instant,
}

impl Shared {
    fn fail(&self, reason: String) {
        let mut st = self.state.lock().unwrap();
        if st.failure.is_none() {
            for peer in st.peers.values() {
                let _ = peer.tx.send(Message::Abort {
                    reason: reason.clone(),
                });
            }
            st.failure = Some(reason);
        }
        self.changed.notify_all();
    }
}

impl Server {
    /// Listens on `bind` (port 0 picks a free port; see `local_addr`).
    pub fn start(
        bind: SocketAddr,
        world_size: u32,
        token: String,
        unique_id: [u8; 128],
    ) -> std::io::Result<Server> {
        let rt = runtime()?;
        let listener = rt.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.set_reuseaddr(true)?;
            socket.bind(bind)?;
            socket.listen(256)
        })?;
        let local_addr = listener.local_addr()?;
        let shared = Shared::new();
        rt.spawn(accept_loop(
            listener,
            shared.clone(),
            world_size,
            token,
            unique_id,
        ));
        rt.spawn(watch_heartbeats(shared.clone()));
        Ok(Server {
            rt,
            shared,
            local_addr,
            world_size,
            unique_id,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Blocks until all `world_size − 1` peers joined.
    pub fn wait_joined(&self, deadline: Instant) -> Result<(), RdzvError> {
        let need = self.world_size as usize - 1;
        self.shared.wait_until(
            deadline,
            |st| st.peers.len() >= need,
            |st| {
                let missing = missing_ranks(self.world_size, |r| st.peers.contains_key(&r));
                format!("rank(s) {missing} to join")
            },
        )
    }

    /// Host and pid each peer reported, by rank.
    pub fn peers(&self) -> Vec<(u32, String, u32)> {
        let st = self.shared.state.lock().unwrap();
        let mut v: Vec<_> = st
            .peers
            .iter()
            .map(|(r, p)| (*r, p.host.clone(), p.pid))
            .collect();
        v.sort();
        v
    }
}

impl Group for Server {
    fn rank(&self) -> u32 {
        0
    }
    fn world_size(&self) -> u32 {
        self.world_size
    }
    fn unique_id(&self) -> [u8; 128] {
        self.unique_id
    }

    fn barrier(&self, seq: u64, deadline: Instant) -> Result<(), RdzvError> {
        let n = self.world_size;
        self.shared.wait_until(
            deadline,
            |st| {
                // A world of one has no peer to wait for.
                st.arrivals.get(&seq).map_or(0, |s| s.len()) as u32 >= n - 1
            },
            |st| {
                let got = st.arrivals.get(&seq);
                let missing = missing_ranks(n, |r| got.is_some_and(|g| g.contains(&r)));
                format!("rank(s) {missing} at barrier {seq}")
            },
        )?;
        let mut st = self.shared.state.lock().unwrap();
        st.arrivals.remove(&seq);
        for peer in st.peers.values() {
            let _ = peer.tx.send(Message::Release { barrier: seq });
        }
        Ok(())
    }

    fn gather(
        &self,
        seq: u64,
        data: serde_json::Value,
        deadline: Instant,
    ) -> Result<Option<Vec<serde_json::Value>>, RdzvError> {
        let n = self.world_size;
        self.shared.wait_until(
            deadline,
            |st| st.gathers.get(&seq).map_or(0, |g| g.len()) as u32 >= n - 1,
            |st| {
                let got = st.gathers.get(&seq);
                let missing = missing_ranks(n, |r| got.is_some_and(|g| g.contains_key(&r)));
                format!("results of rank(s) {missing} (gather {seq})")
            },
        )?;
        let mut st = self.shared.state.lock().unwrap();
        let mut got = st.gathers.remove(&seq).unwrap_or_default();
        let mut all = vec![data];
        for r in 1..n {
            all.push(got.remove(&r).unwrap_or(serde_json::Value::Null));
        }
        Ok(Some(all))
    }

    fn failure(&self) -> Option<String> {
        self.shared.state.lock().unwrap().failure.clone()
    }

    fn abort(&self, reason: &str) {
        self.shared.fail(reason.to_string());
    }

    fn close(&self) {
        // Give peers a moment to say goodbye so their exit is not mistaken for a crash.
        let deadline = Instant::now() + Duration::from_secs(5);
        let need = self.world_size as usize - 1;
        let _ = self.shared.wait_until(
            deadline,
            |st| st.said_bye.len() >= need,
            |_| "goodbyes".into(),
        );
        self.rt.block_on(async { tokio::task::yield_now().await });
    }
}

/// `1, 3`: the peers (ranks 1..n) for which `present` is false.
fn missing_ranks(n: u32, present: impl Fn(u32) -> bool) -> String {
    let missing: Vec<String> = (1..n)
        .filter(|&r| !present(r))
        .map(|r| r.to_string())
        .collect();
    missing.join(", ")
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    world_size: u32,
    token: String,
    unique_id: [u8; 128],
) {
    loop {
        let Ok((stream, addr)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_peer(
            stream,
            addr,
            shared.clone(),
            world_size,
            token.clone(),
            unique_id,
        ));
    }
}

/// One connection: handshake, then read frames until the peer leaves.
async fn serve_peer(
    stream: TcpStream,
    addr: SocketAddr,
    shared: Arc<Shared>,
    world_size: u32,
    token: String,
    unique_id: [u8; 128],
) {
    let (mut rd, mut wr) = stream.into_split();
    let nonce = protocol::random_hex();
    let challenge = Message::Challenge {
        protocol: PROTOCOL,
        nonce: nonce.clone(),
    };
    if protocol::write_frame(&mut wr, &challenge).await.is_err() {
        return;
    }
    let hello = tokio::time::timeout(Duration::from_secs(10), protocol::read_frame(&mut rd)).await;
    let (rank, host, pid) = match hello {
        Ok(Ok(Message::Hello {
            protocol: p,
            rank,
            world_size: w,
            proof,
            host,
            pid,
        })) => {
            let refuse = if p != PROTOCOL {
                Some(format!(
                    "protocol {p} is not {PROTOCOL}: run the same netcheck version on every node"
                ))
            } else if !protocol::same_proof(&proof, &protocol::proof(&nonce, &token)) {
                Some("wrong run token".to_string())
            } else if w != world_size {
                Some(format!(
                    "world size {w} does not match rank 0's {world_size}"
                ))
            } else if rank == 0 || rank >= world_size {
                Some(format!("rank {rank} is out of range 1..{}", world_size - 1))
            } else if shared.state.lock().unwrap().peers.contains_key(&rank) {
                Some(format!("rank {rank} already joined"))
            } else {
                None
            };
            if let Some(reason) = refuse {
                crate::say!("netcheck: rendezvous refused {addr} (claims rank {rank}): {reason}");
                let _ = protocol::write_frame(&mut wr, &Message::Reject { reason }).await;
                return;
            }
            (rank, host, pid)
        }
        // Anything else before a valid Hello (garbage, an oversized frame, silence) just closes
        // the connection: it never joined, so it cannot hurt the run.
        _ => return,
    };

    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let welcome = Message::Welcome {
        unique_id: unique_id.to_vec(),
    };
    if protocol::write_frame(&mut wr, &welcome).await.is_err() {
        return;
    }
    {
        let mut st = shared.state.lock().unwrap();
        if let Some(reason) = &st.failure {
            let _ = tx.send(Message::Abort {
                reason: reason.clone(),
            });
        }
        st.peers.insert(
            rank,
            Peer {
                host: host.clone(),
                pid,
                tx,
                last_seen: Instant::now(),
            },
        );
        shared.changed.notify_all();
    }
    tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            if protocol::write_frame(&mut wr, &msg).await.is_err() {
                break;
            }
        }
    });

    loop {
        let msg = protocol::read_frame(&mut rd).await;
        let mut st = shared.state.lock().unwrap();
        if let Some(p) = st.peers.get_mut(&rank) {
            p.last_seen = Instant::now();
        }
        match msg {
            Ok(Message::Heartbeat) => {}
            Ok(Message::Arrive { barrier }) => {
                st.arrivals.entry(barrier).or_default().insert(rank);
            }
            Ok(Message::Gather { seq, data }) => {
                st.gathers.entry(seq).or_default().insert(rank, data);
            }
            Ok(Message::Abort { reason }) => {
                drop(st);
                shared.fail(format!("rank {rank} ({host}) aborted: {reason}"));
                return;
            }
            Ok(Message::Bye) => {
                st.said_bye.insert(rank);
            }
            Ok(other) => {
                drop(st);
                shared.fail(format!("rank {rank} ({host}) sent an unexpected {other:?}"));
                return;
            }
            Err(e) => {
                let left = st.said_bye.contains(&rank);
                drop(st);
                if !left {
                    let why = match e {
                        FrameError::Closed => {
                            "disconnected (process died or was killed)".to_string()
                        }
                        other => other.to_string(),
                    };
                    shared.fail(format!("rank {rank} (host {host}, pid {pid}) {why}"));
                }
                shared.changed.notify_all();
                return;
            }
        }
        shared.changed.notify_all();
    }
}

async fn watch_heartbeats(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let silent = {
            let st = shared.state.lock().unwrap();
            st.peers
                .iter()
                .filter(|(r, _)| !st.said_bye.contains(r))
                .find(|(_, p)| p.last_seen.elapsed() > HEARTBEAT_TIMEOUT)
                .map(|(r, p)| {
                    format!(
                        "rank {r} (host {}, pid {}) silent for {:?}",
                        p.host,
                        p.pid,
                        p.last_seen.elapsed()
                    )
                })
        };
        if let Some(reason) = silent {
            shared.fail(reason);
        }
    }
}
