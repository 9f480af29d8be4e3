//! How long planning takes for large node groups: `cargo bench --bench launch_plan`.
//!
//! Each scenario drives the planner to the end with simulated outcomes (a group fails when it
//! holds a bad node), as `netcheck launch` does between rounds, and also builds the Kubernetes
//! objects of round 1. Target: a 1 000-node `pairs` plan in well under 1 s. Results are recorded
//! in docs/launch.md ("Planning speed").

use std::time::{Duration, Instant};

use netcheck::launch::kube::manifest::{self, GroupSpec, RunSpec, Shm};
use netcheck::launch::kube::nodes::{PodResources, default_tolerations};
use netcheck::launch::plan::{Mode, Outcome, Planner, Pool};

fn pools(nodes: usize, pools: usize) -> Vec<Pool> {
    (0..pools)
        .map(|p| Pool {
            name: format!("pool-{p}"),
            nodes: (0..nodes / pools)
                .map(|i| {
                    format!(
                        "ip-10-{p}-{}-{}.us-west-2.compute.internal",
                        i / 250,
                        i % 250
                    )
                })
                .collect(),
        })
        .collect()
}

/// Plans to the end; returns (rounds, groups).
fn plan(mode: Mode, pools: Vec<Pool>, bad: &[String]) -> (usize, usize) {
    let mut planner = Planner::new(mode, pools, Some(42));
    let (mut rounds, mut groups) = (0, 0);
    while let Some(round) = planner.next_round() {
        rounds += 1;
        for g in &round.groups {
            groups += 1;
            let fails = g.nodes.iter().any(|n| bad.contains(n));
            planner.record(g, if fails { Outcome::Fail } else { Outcome::Pass });
        }
    }
    let verdicts = planner.verdicts();
    assert_eq!(
        verdicts.iter().filter(|v| bad.contains(&v.node)).count(),
        bad.len()
    );
    (rounds, groups)
}

/// The Job and Service of every group of round 1, serialized as the client would send them.
fn objects(nodes: usize) -> usize {
    let spec = RunSpec {
        run: "bench1".into(),
        namespace: "gpu".into(),
        image: "registry.example/netcheck:0.1.0".into(),
        image_pull_policy: None,
        port: 29400,
        worker_args: vec!["--timeout".into(), "5m".into()],
        fabric_check: None,
        env: vec![("NCCL_DEBUG".into(), "INFO".into())],
        tolerations: default_tolerations(),
        strict_net: true,
        ipc_lock: true,
        shm: Shm::Memory { bytes: 16 << 30 },
        deadline_secs: 1620,
        ttl_secs: Some(600),
        service_account: None,
        image_opts: Default::default(),
    };
    let mut planner = Planner::new(Mode::Pairs, pools(nodes, 1), None);
    let round = planner.next_round().unwrap();
    let mut bytes = 0;
    for (k, g) in round.groups.iter().enumerate() {
        let group = GroupSpec {
            seq: k as u32 + 1,
            round: 1,
            pool: "pool-0".into(),
            nodes: g.nodes.clone(),
            resources: PodResources {
                gpus: 8,
                efa: 32,
                hugepages_bytes: 5120 << 20,
                memory_bytes: 48 << 30,
            },
            expect: Some("efa".into()),
        };
        for job in manifest::group_jobs(&spec, &group, None) {
            bytes += serde_json::to_vec(&job).unwrap().len();
        }
        bytes += serde_json::to_vec(&manifest::group_service(&spec, &group, None))
            .unwrap()
            .len();
    }
    bytes
}

fn time<T>(name: &str, runs: usize, mut f: impl FnMut() -> T) -> T {
    let mut samples: Vec<Duration> = vec![];
    let mut out = None;
    for _ in 0..runs {
        let start = Instant::now();
        out = Some(f());
        samples.push(start.elapsed());
    }
    samples.sort();
    println!(
        "{name:<58} min {:>9.2} ms  median {:>9.2} ms  ({runs} runs)",
        samples[0].as_secs_f64() * 1e3,
        samples[runs / 2].as_secs_f64() * 1e3
    );
    out.unwrap()
}

fn main() {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimized"
    };
    println!("launch planner benchmark ({profile} build)");
    let one_bad = vec!["ip-10-0-1-7.us-west-2.compute.internal".to_string()];
    let (r, g) = time(
        "pairs, 1000 nodes, 1 pool, 1 bad node (whole plan)",
        10,
        || plan(Mode::Pairs, pools(1000, 1), &one_bad),
    );
    println!("    {r} rounds, {g} pairs");
    let ten_bad: Vec<String> = (0..10)
        .map(|i| format!("ip-10-{}-0-{}.us-west-2.compute.internal", i % 4, 3 * i))
        .collect();
    let (r, g) = time(
        "pairs, 1000 nodes, 4 pools, 10 bad nodes (whole plan)",
        10,
        || plan(Mode::Pairs, pools(1000, 4), &ten_bad),
    );
    println!("    {r} rounds, {g} pairs");
    let (r, g) = time(
        "ring, 1000 nodes, 1 pool, 1 bad node (every pair)",
        3,
        || plan(Mode::Ring, pools(1000, 1), &one_bad),
    );
    println!("    {r} rounds, {g} pairs");
    let (r, g) = time("full, 1000 nodes, 1 pool", 10, || {
        plan(Mode::Full, pools(1000, 1), &[])
    });
    println!("    {r} rounds, {g} groups");
    let bytes = time(
        "round 1 objects: 500 Jobs + 500 Services as JSON",
        10,
        || objects(1000),
    );
    println!("    {} KiB", bytes / 1024);
}
