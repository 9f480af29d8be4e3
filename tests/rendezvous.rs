//! The rendezvous across real worker processes on loopback (no GPU needed: `--rendezvous-only`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn worker(rank: u32, world: u32, addr: &str, token: &str, extra: &[&str]) -> Child {
    let out = tempfile::tempdir().unwrap().keep();
    Command::new(assert_cmd::cargo::cargo_bin("netcheck"))
        .args([
            "worker",
            "--rendezvous-only",
            "--sweep",
            "{}",
            "--timeout",
            "8s",
        ])
        .args([
            "--rank",
            &rank.to_string(),
            "--world-size",
            &world.to_string(),
            "--rendezvous",
            addr,
        ])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("NETCHECK_RDZV_TOKEN", token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker starts")
}

/// Reads rank 0's stdout until it says which port it listens on.
fn listening_port(child: &mut Child) -> (u16, BufReader<std::process::ChildStdout>) {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "rank 0 ended before listening"
        );
        if let Some(json) = line.strip_prefix("NETCHECK_EVENT ") {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            if v["event"] == "listening" {
                return (v["port"].as_u64().unwrap() as u16, out);
            }
        }
    }
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn ranks_may_arrive_in_any_order() {
    let addr = format!("127.0.0.1:{}", free_port());
    // Peers first: they retry with backoff until rank 0 listens.
    let r2 = worker(2, 3, &addr, "t0k3n", &[]);
    let r1 = worker(1, 3, &addr, "t0k3n", &[]);
    std::thread::sleep(Duration::from_millis(700));
    let r0 = worker(0, 3, &addr, "t0k3n", &[]);
    let (c0, out0, err0) = finish(r0);
    assert_eq!(c0, 0, "rank 0 failed: {err0}");
    assert!(out0.contains(r#""event":"done""#), "{out0}");
    assert_eq!(
        out0.matches(r#""rank":"#).count(),
        3 + 1,
        "three reports and one phase event: {out0}"
    );
    assert_eq!(finish(r1).0, 0);
    assert_eq!(finish(r2).0, 0);
}

#[test]
fn a_wrong_token_is_rejected() {
    let mut r0 = worker(0, 2, "127.0.0.1:0", "right", &[]);
    let (port, out) = listening_port(&mut r0);
    let r1 = worker(1, 2, &format!("127.0.0.1:{port}"), "wrong", &[]);
    let (c1, _, err1) = finish(r1);
    assert_ne!(c1, 0, "a rank with the wrong token must not join");
    assert!(err1.contains("wrong run token"), "{err1}");
    drop(out);
    let (c0, _, err0) = finish(r0);
    assert_eq!(c0, 124, "rank 0 times out waiting for rank 1: {err0}");
    assert!(err0.contains("rank(s) 1 to join"), "{err0}");
}

#[test]
fn a_dead_peer_is_detected_within_the_deadline() {
    let mut r0 = worker(0, 3, "127.0.0.1:0", "tok", &["--hold", "30s"]);
    let (port, out0) = listening_port(&mut r0);
    let addr = format!("127.0.0.1:{port}");
    let r1 = worker(1, 3, &addr, "tok", &["--hold", "30s"]);
    let mut r2 = worker(2, 3, &addr, "tok", &["--hold", "30s"]);
    // Wait until rank 2 holds (it joined and passed the first barrier), then kill it.
    let mut r2_out = BufReader::new(r2.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("holding") {
        line.clear();
        assert!(r2_out.read_line(&mut line).unwrap() > 0);
    }
    let killed_at = Instant::now();
    r2.kill().unwrap();
    r2.wait().unwrap();
    drop(out0);
    let (c0, _, err0) = finish(r0);
    let (c1, _, err1) = finish(r1);
    assert!(
        killed_at.elapsed() < Duration::from_secs(10),
        "took {:?}",
        killed_at.elapsed()
    );
    assert_eq!(c0, 124, "{err0}");
    assert!(
        err0.contains("rank 2") && err0.contains("disconnected"),
        "rank 0 names the dead rank: {err0}"
    );
    assert_eq!(c1, 124, "rank 1 is told to stop: {err1}");
    assert!(err1.contains("rank 2"), "{err1}");
}

#[test]
fn an_oversized_frame_is_refused_and_the_run_goes_on() {
    let mut r0 = worker(0, 2, "127.0.0.1:0", "tok", &[]);
    let (port, _out) = listening_port(&mut r0);
    let mut rogue = TcpStream::connect(("127.0.0.1", port)).unwrap();
    rogue
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut len = [0u8; 4];
    rogue.read_exact(&mut len).unwrap();
    let mut challenge = vec![0u8; u32::from_be_bytes(len) as usize];
    rogue.read_exact(&mut challenge).unwrap();
    // Claim a 1 GiB frame: rank 0 must close the connection instead of allocating it.
    rogue.write_all(&(1u32 << 30).to_be_bytes()).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(rogue.read(&mut buf).unwrap_or(0), 0, "connection closed");
    let r1 = worker(1, 2, &format!("127.0.0.1:{port}"), "tok", &[]);
    assert_eq!(finish(r1).0, 0);
    drop(_out);
    let (c0, _, err0) = finish(r0);
    assert_eq!(c0, 0, "{err0}");
}

#[test]
fn ranks_may_share_one_process_as_threads() {
    // Ranks 0 and 1 as threads of one worker (`run --one-process`), rank 2 in its own process.
    let mut both = worker(0, 3, "127.0.0.1:0", "thr34d", &["--ranks", "2"]);
    let (port, mut out) = listening_port(&mut both);
    let r2 = worker(2, 3, &format!("127.0.0.1:{port}"), "thr34d", &[]);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = both.wait().unwrap();
    assert!(status.success(), "{rest}");
    let done = rest
        .lines()
        .filter_map(|l| l.strip_prefix("NETCHECK_EVENT "))
        .map(|j| serde_json::from_str::<serde_json::Value>(j).unwrap())
        .find(|v| v["event"] == "done")
        .expect("rank 0 announced the gathered reports");
    let mut ranks: Vec<u64> = done["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    ranks.sort();
    assert_eq!(ranks, [0, 1, 2]);
    let (code, _, err) = finish(r2);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_process_cannot_host_ranks_beyond_the_world() {
    let (code, _, err) = finish(worker(1, 2, "127.0.0.1:1", "t", &["--ranks", "2"]));
    assert_eq!(code, 2);
    assert!(err.contains("outside world size 2"), "{err}");
}

#[test]
fn a_world_of_one_needs_no_peer() {
    // One GPU: rank 0 alone passes every barrier and gather at once, not at the deadline.
    let started = Instant::now();
    let r0 = worker(0, 1, "127.0.0.1:0", "solo", &["--hold", "100ms"]);
    let (c0, out0, err0) = finish(r0);
    assert_eq!(c0, 0, "a one-rank world must finish: {err0}");
    assert!(out0.contains(r#""event":"done""#), "{out0}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}, the worker's timeout is 8 s",
        started.elapsed()
    );
}
