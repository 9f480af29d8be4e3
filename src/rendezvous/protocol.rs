//! The rendezvous wire format: length-prefixed JSON frames (u32 big-endian length, then the
//! message). Frames are bounded so a stray or hostile peer cannot make rank 0 allocate
//! gigabytes; a peer proves it holds the run token by hashing it with a fresh nonce, so the token
//! never crosses the network and a stale pod from an earlier run cannot join.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bumped when messages change incompatibly.
pub const PROTOCOL: u32 = 1;

/// The largest frame either side accepts (per-rank NCCL logs travel in gathers, capped below).
pub const MAX_FRAME: usize = 16 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Rank 0 → peer, first frame on every connection.
    Challenge { protocol: u32, nonce: String },
    /// Peer → rank 0: who it is and proof of the token.
    Hello {
        protocol: u32,
        rank: u32,
        world_size: u32,
        proof: String,
        host: String,
        pid: u32,
    },
    /// Rank 0 → peer: accepted; the NCCL unique id (128 bytes, never parsed).
    Welcome { unique_id: Vec<u8> },
    /// Rank 0 → peer: refused, and why. The connection closes after it.
    Reject { reason: String },
    /// Peer → rank 0, every second: "still alive".
    Heartbeat,
    /// Peer → rank 0: reached barrier `barrier`.
    Arrive { barrier: u64 },
    /// Rank 0 → peers: everyone reached barrier `barrier`.
    Release { barrier: u64 },
    /// Peer → rank 0: this rank's contribution to gather `seq`.
    Gather { seq: u64, data: serde_json::Value },
    /// Either way: the run is over because of `reason` (a dead peer, a timeout, Ctrl-C).
    Abort { reason: String },
    /// Peer → rank 0: finished normally; a closed connection after this is not a failure.
    Bye,
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte limit")]
    TooLarge(usize),
    #[error("malformed frame: {0}")]
    Malformed(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, msg: &Message) -> std::io::Result<()> {
    let body = serde_json::to_vec(msg).expect("messages serialize");
    assert!(
        body.len() <= MAX_FRAME,
        "a netcheck message exceeds MAX_FRAME"
    );
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame).await?;
    w.flush().await
}

pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Message, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => FrameError::Closed,
        _ => FrameError::Io(e),
    })?;
    serde_json::from_slice(&body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// `sha256(nonce || token)` as hex.
pub fn proof(nonce: &str, token: &str) -> String {
    let mut h = Sha256::new();
    h.update(nonce.as_bytes());
    h.update(token.as_bytes());
    hex(&h.finalize())
}

/// Compares without an early exit, so timing does not reveal how much of a proof was right.
pub fn same_proof(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A fresh random token or nonce (32 random bytes as hex).
pub fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let msg = Message::Gather {
            seq: 3,
            data: serde_json::json!({"x": 1}),
        };
        write_frame(&mut a, &msg).await.unwrap();
        assert_eq!(read_frame(&mut b).await.unwrap(), msg);
        drop(a);
        assert!(matches!(read_frame(&mut b).await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn oversized_and_malformed_frames_are_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&(MAX_FRAME as u32 + 1).to_be_bytes())
            .await
            .unwrap();
        assert!(matches!(
            read_frame(&mut b).await,
            Err(FrameError::TooLarge(_))
        ));
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&3u32.to_be_bytes()).await.unwrap();
        a.write_all(b"{x]").await.unwrap();
        assert!(matches!(
            read_frame(&mut b).await,
            Err(FrameError::Malformed(_))
        ));
    }

    #[test]
    fn proofs_depend_on_token_and_nonce() {
        let p = proof("n1", "secret");
        assert!(same_proof(&p, &proof("n1", "secret")));
        assert!(!same_proof(&p, &proof("n2", "secret")));
        assert!(!same_proof(&p, &proof("n1", "Secret")));
        assert_ne!(random_hex(), random_hex());
    }
}
