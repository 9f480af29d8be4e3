//! A peer's side: connect to rank 0 with backoff, prove the token, receive the unique id, then
//! send heartbeats from the background while the caller drives the GPU.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::protocol::{self, FrameError, Message, PROTOCOL};
use super::shared::{self, runtime};
use super::{Group, HEARTBEAT_INTERVAL, RdzvError, backoff};

pub struct Client {
    _rt: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Message>,
    rank: u32,
    world_size: u32,
    unique_id: [u8; 128],
}

type Shared = shared::Shared<State>;

#[derive(Default)]
struct State {
    released: HashSet<u64>,
    failure: Option<String>,
    closing: bool,
}

impl shared::State for State {
    fn failure(&self) -> Option<&String> {
        self.failure.as_ref()
    }
}

impl Client {
    /// Connects to rank 0 at `addr` (`host:port`), retrying refused connections and unresolved
    /// names with backoff until `deadline`.
    pub fn connect(
        addr: &str,
        rank: u32,
        world_size: u32,
        token: &str,
        host: &str,
        deadline: Instant,
    ) -> Result<Client, RdzvError> {
        let rt = runtime()
            .map_err(|e| RdzvError::Failed(format!("cannot start the rendezvous runtime: {e}")))?;
        let start = Instant::now();
        let (stream, welcome) = rt.block_on(async {
            let mut attempt = 0;
            let mut last_err = String::new();
            loop {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    return Err(RdzvError::Timeout {
                        waiting_for: format!("rank 0 at {addr} ({last_err})"),
                        waited: start.elapsed(),
                    });
                }
                match tokio::time::timeout(
                    remaining,
                    handshake(addr, rank, world_size, token, host),
                )
                .await
                {
                    Ok(Ok(ok)) => return Ok(ok),
                    Ok(Err(Handshake::Retry(e))) => last_err = e,
                    Ok(Err(Handshake::Refused(reason))) => {
                        return Err(RdzvError::Failed(format!(
                            "rank 0 at {addr} refused rank {rank}: {reason}"
                        )));
                    }
                    Err(_) => last_err = "no answer".into(),
                }
                tokio::time::sleep(
                    backoff(attempt).min(deadline.saturating_duration_since(Instant::now())),
                )
                .await;
                attempt += 1;
            }
        })?;

        let shared = Shared::new();
        let (rd, mut wr) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
        rt.spawn(async move {
            while let Some(msg) = rx.recv().await {
                if protocol::write_frame(&mut wr, &msg).await.is_err() {
                    break;
                }
            }
        });
        rt.spawn(read_loop(rd, shared.clone()));
        let hb = tx.clone();
        rt.spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT_INTERVAL).await;
                if hb.send(Message::Heartbeat).is_err() {
                    break;
                }
            }
        });
        Ok(Client {
            _rt: rt,
            shared,
            tx,
            rank,
            world_size,
            unique_id: welcome,
        })
    }
}

enum Handshake {
    /// Worth another try: rank 0 not up yet, name not resolvable yet, connection reset.
    Retry(String),
    /// Rank 0 said no; retrying would not help.
    Refused(String),
}

async fn handshake(
    addr: &str,
    rank: u32,
    world_size: u32,
    token: &str,
    host: &str,
) -> Result<(TcpStream, [u8; 128]), Handshake> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| Handshake::Retry(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let nonce = match protocol::read_frame(&mut stream).await {
        Ok(Message::Challenge {
            protocol: PROTOCOL,
            nonce,
        }) => nonce,
        Ok(Message::Challenge { protocol: p, .. }) => {
            return Err(Handshake::Refused(format!(
                "rank 0 speaks protocol {p}, this netcheck {PROTOCOL}: run the same netcheck version on every node"
            )));
        }
        Ok(other) => {
            return Err(Handshake::Refused(format!(
                "unexpected first message {other:?}"
            )));
        }
        Err(e) => return Err(Handshake::Retry(e.to_string())),
    };
    let hello = Message::Hello {
        protocol: PROTOCOL,
        rank,
        world_size,
        proof: protocol::proof(&nonce, token),
        host: host.to_string(),
        pid: std::process::id(),
    };
    protocol::write_frame(&mut stream, &hello)
        .await
        .map_err(|e| Handshake::Retry(e.to_string()))?;
    match protocol::read_frame(&mut stream).await {
        Ok(Message::Welcome { unique_id }) if unique_id.len() == 128 => {
            let mut id = [0u8; 128];
            id.copy_from_slice(&unique_id);
            Ok((stream, id))
        }
        Ok(Message::Reject { reason }) => Err(Handshake::Refused(reason)),
        Ok(other) => Err(Handshake::Refused(format!("unexpected answer {other:?}"))),
        Err(FrameError::Closed) => Err(Handshake::Retry(
            "connection closed during handshake".into(),
        )),
        Err(e) => Err(Handshake::Retry(e.to_string())),
    }
}

async fn read_loop(mut rd: tokio::net::tcp::OwnedReadHalf, shared: Arc<Shared>) {
    loop {
        let msg = protocol::read_frame(&mut rd).await;
        let mut st = shared.state.lock().unwrap();
        match msg {
            Ok(Message::Release { barrier }) => {
                st.released.insert(barrier);
            }
            Ok(Message::Abort { reason }) => {
                st.failure.get_or_insert(reason);
            }
            Ok(_) => {}
            Err(e) => {
                if !st.closing {
                    let why = match e {
                        FrameError::Closed => {
                            "rank 0 closed the connection (it died or ended the run)".to_string()
                        }
                        other => format!("lost rank 0: {other}"),
                    };
                    st.failure.get_or_insert(why);
                }
                shared.changed.notify_all();
                return;
            }
        }
        shared.changed.notify_all();
    }
}

impl Group for Client {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn world_size(&self) -> u32 {
        self.world_size
    }
    fn unique_id(&self) -> [u8; 128] {
        self.unique_id
    }

    fn barrier(&self, seq: u64, deadline: Instant) -> Result<(), RdzvError> {
        let _ = self.tx.send(Message::Arrive { barrier: seq });
        self.shared.wait_until(
            deadline,
            |st| st.released.remove(&seq),
            |_| format!("the other ranks at barrier {seq}"),
        )
    }

    fn gather(
        &self,
        seq: u64,
        data: serde_json::Value,
        _deadline: Instant,
    ) -> Result<Option<Vec<serde_json::Value>>, RdzvError> {
        if let Some(f) = self.failure() {
            return Err(RdzvError::Failed(f));
        }
        let _ = self.tx.send(Message::Gather { seq, data });
        Ok(None)
    }

    fn failure(&self) -> Option<String> {
        self.shared.state.lock().unwrap().failure.clone()
    }

    fn abort(&self, reason: &str) {
        let _ = self.tx.send(Message::Abort {
            reason: reason.to_string(),
        });
        std::thread::sleep(Duration::from_millis(100));
    }

    fn close(&self) {
        self.shared.state.lock().unwrap().closing = true;
        let _ = self.tx.send(Message::Bye);
        // Let the writer flush the goodbye before the runtime is dropped.
        std::thread::sleep(Duration::from_millis(50));
    }
}
