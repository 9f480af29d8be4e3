//! Which nodes are tested together, round by round, and what the results say about each node.
//!
//! Pure: no Kubernetes and no I/O, so every rule is unit-tested and a 1 000-node plan is cheap
//! (`benches/launch_plan.rs`). Nodes are only ever grouped with nodes of the same [`Pool`]
//! (instance type and zone), because a pair of unlike nodes measures the slower one.
//!
//! - [`Mode::Pairs`]: round 1 pairs neighbours, all pairs at once. Nodes of failing pairs (and
//!   the odd one out) are then re-paired with nodes that passed, so a failure names the bad node
//!   rather than a pair. Without a known-good node, suspects are re-paired among themselves.
//! - [`Mode::Ring`]: every pair exactly once, in n−1 rounds (the circle method); a node that
//!   fails with most of its peers is bad.
//! - [`Mode::Full`]: one group over all nodes of a pool; a failure says "this pool", not which node.
//!
//! Driving it: `next_round()` → run the groups → `record()` each group's [`Outcome`] → repeat
//! until `next_round()` returns `None`, then read `verdicts()` and `link_failures()`.

use std::collections::{HashMap, HashSet};

/// How nodes are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pairs,
    Ring,
    Full,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "pairs" => Some(Mode::Pairs),
            "ring" => Some(Mode::Ring),
            "full" => Some(Mode::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Pairs => "pairs",
            Mode::Ring => "ring",
            Mode::Full => "full",
        }
    }
}

/// Nodes that may be tested together (same instance type and zone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub nodes: Vec<String>,
}

/// Nodes that run one benchmark together: two in `pairs` and `ring`, a whole pool in `full`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Index into the pools the planner was built with.
    pub pool: usize,
    pub nodes: Vec<String>,
}

impl Group {
    /// `node-a+node-b`, the pair's name in results and reports.
    pub fn name(&self) -> String {
        self.nodes.join("+")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Every node once, all pairs in parallel.
    Sweep,
    /// Suspects and untested nodes against nodes that passed.
    Isolate,
    /// Step `step` of `of` of the round-robin.
    Ring { step: u32, of: u32 },
    /// One group per pool.
    Full,
}

impl std::fmt::Display for Purpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Purpose::Sweep => f.write_str("sweep"),
            Purpose::Isolate => f.write_str("isolation"),
            Purpose::Ring { step, of } => write!(f, "ring step {step}/{of}"),
            Purpose::Full => f.write_str("full"),
        }
    }
}

/// Groups that run at the same time. No node is in two groups of one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// 1-based.
    pub number: u32,
    pub purpose: Purpose,
    pub groups: Vec<Group>,
}

impl Round {
    /// Nodes of `pools` that a sweep or ring round leaves out because their pool has an odd
    /// number of nodes (none for isolation and full rounds, which test only some nodes or all).
    pub fn sitting_out<'a>(&self, pools: &'a [Pool]) -> Vec<&'a str> {
        if !matches!(self.purpose, Purpose::Sweep | Purpose::Ring { .. }) {
            return vec![];
        }
        let busy: HashSet<&str> = self
            .groups
            .iter()
            .flat_map(|g| g.nodes.iter().map(String::as_str))
            .collect();
        pools
            .iter()
            .filter(|p| p.nodes.len() >= 2)
            .flat_map(|p| p.nodes.iter().map(String::as_str))
            .filter(|n| !busy.contains(n))
            .collect()
    }

    /// One line per node left out (`sitting_out`), saying when it is tested.
    pub fn sitting_out_lines(&self, pools: &[Pool]) -> Vec<String> {
        let later = match self.purpose {
            Purpose::Sweep => "it is paired with a node that passed in round 2",
            _ => "it is paired in the other steps",
        };
        self.sitting_out(pools)
            .into_iter()
            .map(|n| {
                format!(
                    "{n} sits out round {} (odd number of nodes in its pool); {later}",
                    self.number
                )
            })
            .collect()
    }
}

/// What one group's benchmark said, as far as blame is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// Wrong results, expectation not met, hang, too slow: something about these nodes is bad.
    Fail,
    /// Could not judge: not scheduled, image pull, API errors.
    Inconclusive,
}

/// The final word on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Pass,
    /// Failed with a known-good peer (pairs), or with most of its peers (ring).
    Fail,
    /// In a failing group, but no test could tell whether it or its peer is at fault.
    Suspect,
    /// Every test it was in was inconclusive.
    Inconclusive,
    /// Never in a group (no peer of its pool, or the test limit was reached).
    Untested,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Suspect => "suspect",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Untested => "untested",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVerdict {
    pub node: String,
    pub pool: String,
    pub verdict: Verdict,
    pub reason: String,
}

/// How often one node may be re-tested in `pairs` mode before the planner gives up on it.
const MAX_TESTS_PER_NODE: u32 = 4;

/// What the planner knows about a node in `pairs` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Untested,
    /// Passed with some peer.
    Good,
    /// Failed with a node that passed elsewhere.
    Bad,
    /// In a failing group, not yet resolved.
    Suspect,
    /// Only inconclusive so far; worth one more try.
    Unjudged,
    /// Inconclusive even with a known-good peer: its own problem, but not a network verdict.
    Inconclusive,
}

#[derive(Clone)]
struct PoolState {
    name: String,
    nodes: Vec<String>,
    state: Vec<State>,
    tests: Vec<u32>,
    /// Unordered pairs already run (smaller index first), with their outcome.
    tested: HashMap<(usize, usize), Outcome>,
    /// The first peer each node passed with, failed with (for the reasons).
    passed_with: Vec<Option<usize>>,
    failed_with: Vec<Vec<usize>>,
    /// `ring`: the rounds, computed up front.
    ring: Vec<Vec<(usize, usize)>>,
    /// `full`: the group's outcome.
    full: Option<Outcome>,
    /// Taken out of later rounds (the node changed: deleted, cordoned...), with why.
    withdrawn: Vec<Option<String>>,
}

impl PoolState {
    fn new(pool: &Pool) -> PoolState {
        let n = pool.nodes.len();
        PoolState {
            name: pool.name.clone(),
            nodes: pool.nodes.clone(),
            state: vec![State::Untested; n],
            tests: vec![0; n],
            tested: HashMap::new(),
            passed_with: vec![None; n],
            failed_with: vec![vec![]; n],
            ring: vec![],
            full: None,
            withdrawn: vec![None; n],
        }
    }

    fn available(&self, i: usize) -> bool {
        self.withdrawn[i].is_none()
    }

    fn group(&self, pool: usize, members: &[usize]) -> Group {
        Group {
            pool,
            nodes: members.iter().map(|&i| self.nodes[i].clone()).collect(),
        }
    }
}

#[derive(Clone)]
pub struct Planner {
    mode: Mode,
    pools: Vec<PoolState>,
    /// Node name → (pool, index), to record outcomes by name.
    index: HashMap<String, (usize, usize)>,
    rounds_done: u32,
    ring_steps: u32,
}

impl Planner {
    /// `seed` shuffles the order in which round 1 pairs nodes (None: sorted by name, so
    /// neighbours pair). Node names must be unique across pools; empty pools are ignored.
    pub fn new(mode: Mode, pools: Vec<Pool>, seed: Option<u64>) -> Planner {
        let mut states: Vec<PoolState> = pools
            .iter()
            .filter(|p| !p.nodes.is_empty())
            .map(|p| {
                let mut pool = p.clone();
                pool.nodes.sort();
                pool.nodes.dedup();
                if let Some(seed) = seed {
                    shuffle(&mut pool.nodes, seed);
                }
                PoolState::new(&pool)
            })
            .collect();
        let mut index = HashMap::new();
        for (p, pool) in states.iter().enumerate() {
            for (i, node) in pool.nodes.iter().enumerate() {
                index.insert(node.clone(), (p, i));
            }
        }
        let mut ring_steps = 0;
        if mode == Mode::Ring {
            for pool in &mut states {
                pool.ring = circle_rounds(pool.nodes.len());
                ring_steps = ring_steps.max(pool.ring.len() as u32);
            }
        }
        Planner {
            mode,
            pools: states,
            index,
            rounds_done: 0,
            ring_steps,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Takes a node out of every later round (it was deleted, cordoned, became NotReady...);
    /// its verdict keeps what earlier rounds found and says why it was not tested further.
    pub fn withdraw(&mut self, node: &str, why: &str) {
        if let Some(&(p, i)) = self.index.get(node) {
            self.pools[p].withdrawn[i] = Some(why.to_string());
        }
    }

    /// Whether another round follows (what `next_round` would give, without taking it): the
    /// launcher reads the nodes again only then.
    pub fn has_next_round(&self) -> bool {
        self.clone().next_round().is_some()
    }

    /// The next groups to run, or `None` when the plan is complete. Call `record` for every
    /// group of a round before asking for the next one.
    pub fn next_round(&mut self) -> Option<Round> {
        let number = self.rounds_done + 1;
        let (purpose, groups) = match self.mode {
            Mode::Full => (Purpose::Full, self.full_groups()),
            Mode::Ring => (
                Purpose::Ring {
                    step: number,
                    of: self.ring_steps,
                },
                self.ring_groups(number as usize - 1),
            ),
            Mode::Pairs if number == 1 => (Purpose::Sweep, self.sweep_groups()),
            Mode::Pairs => (Purpose::Isolate, self.isolation_groups()),
        };
        if groups.is_empty() {
            return None;
        }
        self.rounds_done = number;
        Some(Round {
            number,
            purpose,
            groups,
        })
    }

    fn full_groups(&self) -> Vec<Group> {
        if self.rounds_done > 0 {
            return vec![];
        }
        let all = |(p, pool): (usize, &PoolState)| {
            (pool.nodes.len() >= 2)
                .then(|| pool.group(p, &(0..pool.nodes.len()).collect::<Vec<_>>()))
        };
        self.pools.iter().enumerate().filter_map(all).collect()
    }

    fn ring_groups(&self, step: usize) -> Vec<Group> {
        let mut groups = vec![];
        for (p, pool) in self.pools.iter().enumerate() {
            for &(a, b) in pool.ring.get(step).map(Vec::as_slice).unwrap_or(&[]) {
                if !(pool.available(a) && pool.available(b)) {
                    continue;
                }
                groups.push(pool.group(p, &[a, b]));
            }
        }
        groups
    }

    fn sweep_groups(&self) -> Vec<Group> {
        let mut groups = vec![];
        for (p, pool) in self.pools.iter().enumerate() {
            for i in (0..pool.nodes.len() / 2 * 2).step_by(2) {
                groups.push(pool.group(p, &[i, i + 1]));
            }
        }
        groups
    }

    /// Each open node (untested, suspect, unjudged) against a different known-good node; where a
    /// pool has no good node yet, open nodes against each other in pairs not yet tried.
    fn isolation_groups(&self) -> Vec<Group> {
        let mut groups = vec![];
        for (p, pool) in self.pools.iter().enumerate() {
            let before = groups.len();
            let open: Vec<usize> = (0..pool.nodes.len())
                .filter(|&i| {
                    matches!(
                        pool.state[i],
                        State::Untested | State::Suspect | State::Unjudged
                    ) && pool.tests[i] < MAX_TESTS_PER_NODE
                        && pool.available(i)
                })
                .collect();
            let good: Vec<usize> = (0..pool.nodes.len())
                .filter(|&i| pool.state[i] == State::Good && pool.available(i))
                .collect();
            let mut busy = HashSet::new();
            let untried = |a: usize, b: usize| !pool.tested.contains_key(&(a.min(b), a.max(b)));
            if !good.is_empty() {
                // Each good node once per round; start each search after the last good node
                // used, so the load spreads over all of them.
                let mut start = 0;
                for &o in &open {
                    let pick = (0..good.len())
                        .map(|k| (start + k) % good.len())
                        .find(|&k| !busy.contains(&good[k]) && untried(o, good[k]));
                    if let Some(k) = pick {
                        busy.insert(good[k]);
                        start = k + 1;
                        groups.push(pool.group(p, &[o, good[k]]));
                    }
                }
            } else {
                for (k, &a) in open.iter().enumerate() {
                    if busy.contains(&a) {
                        continue;
                    }
                    let peer = open[k + 1..]
                        .iter()
                        .copied()
                        .find(|&b| !busy.contains(&b) && untried(a, b));
                    if let Some(b) = peer {
                        busy.insert(a);
                        busy.insert(b);
                        groups.push(pool.group(p, &[a, b]));
                    }
                }
            }
            // Nothing else to pair, but a node was never tested (it sat out the sweep and
            // every other node has used up its tests): test it once with any node it has not
            // met, a good one first, so that no node ends untested.
            if groups.len() == before {
                for o in (0..pool.nodes.len())
                    .filter(|&i| pool.state[i] == State::Untested && pool.available(i))
                {
                    let peer = (0..pool.nodes.len())
                        .filter(|&b| {
                            b != o && !busy.contains(&b) && untried(o, b) && pool.available(b)
                        })
                        .min_by_key(|&b| (pool.state[b] != State::Good, pool.tests[b]));
                    if let Some(b) = peer
                        && busy.insert(o)
                    {
                        busy.insert(b);
                        groups.push(pool.group(p, &[o, b]));
                    }
                }
            }
        }
        groups
    }

    /// Records a group's outcome. Groups not produced by this planner are ignored.
    pub fn record(&mut self, group: &Group, outcome: Outcome) {
        let members: Vec<(usize, usize)> = group
            .nodes
            .iter()
            .filter_map(|n| self.index.get(n).copied())
            .collect();
        let Some(&(p, _)) = members.first() else {
            return;
        };
        let pool = &mut self.pools[p];
        if self.mode == Mode::Full {
            pool.full = Some(outcome);
            for &(_, i) in &members {
                pool.tests[i] += 1;
            }
            return;
        }
        let [(_, a), (_, b)] = members[..] else {
            return;
        };
        pool.tested.insert((a.min(b), a.max(b)), outcome);
        pool.tests[a] += 1;
        pool.tests[b] += 1;
        if self.mode == Mode::Ring {
            match outcome {
                Outcome::Pass => {
                    pool.passed_with[a].get_or_insert(b);
                    pool.passed_with[b].get_or_insert(a);
                }
                Outcome::Fail => {
                    pool.failed_with[a].push(b);
                    pool.failed_with[b].push(a);
                }
                Outcome::Inconclusive => {}
            }
            return;
        }
        let before = (pool.state[a], pool.state[b]);
        for (x, y, peer_state) in [(a, b, before.1), (b, a, before.0)] {
            let own = pool.state[x];
            pool.state[x] = match (outcome, own, peer_state) {
                (_, State::Bad | State::Inconclusive, _) => own,
                (Outcome::Pass, _, _) => {
                    pool.passed_with[x].get_or_insert(y);
                    State::Good
                }
                (Outcome::Fail, State::Good, _) => State::Good,
                (Outcome::Fail, _, State::Good) => {
                    pool.failed_with[x].push(y);
                    State::Bad
                }
                (Outcome::Fail, _, _) => {
                    pool.failed_with[x].push(y);
                    State::Suspect
                }
                (Outcome::Inconclusive, State::Good | State::Suspect, _) => own,
                (Outcome::Inconclusive, _, State::Good) => State::Inconclusive,
                (Outcome::Inconclusive, _, _) => State::Unjudged,
            };
        }
        if outcome == Outcome::Pass {
            // A suspect that failed with a node now proven good is the bad one.
            for x in [a, b] {
                for k in 0..pool.failed_with[x].len() {
                    let y = pool.failed_with[x][k];
                    if pool.state[y] == State::Suspect {
                        pool.state[y] = State::Bad;
                    }
                }
            }
        }
    }

    /// One verdict per node, pools in order, nodes by name.
    pub fn verdicts(&self) -> Vec<NodeVerdict> {
        let mut out = vec![];
        for pool in &self.pools {
            let mut order: Vec<usize> = (0..pool.nodes.len()).collect();
            order.sort_by(|&a, &b| pool.nodes[a].cmp(&pool.nodes[b]));
            for i in order {
                let (verdict, mut reason) = match self.mode {
                    Mode::Pairs => pairs_verdict(pool, i),
                    Mode::Ring => ring_verdict(pool, i),
                    Mode::Full => full_verdict(pool),
                };
                if let Some(why) = &pool.withdrawn[i]
                    && !matches!(verdict, Verdict::Pass | Verdict::Fail)
                {
                    reason = format!("{reason}; not tested further: {why}");
                }
                out.push(NodeVerdict {
                    node: pool.nodes[i].clone(),
                    pool: pool.name.clone(),
                    verdict,
                    reason,
                });
            }
        }
        out
    }

    /// Failed pairs of two nodes that both passed: the link between them, or a flaky run.
    pub fn link_failures(&self) -> Vec<(String, String)> {
        let verdicts: HashMap<String, Verdict> = self
            .verdicts()
            .into_iter()
            .map(|v| (v.node, v.verdict))
            .collect();
        let mut out = vec![];
        for pool in &self.pools {
            for (&(a, b), &outcome) in &pool.tested {
                let (na, nb) = (&pool.nodes[a], &pool.nodes[b]);
                if outcome == Outcome::Fail
                    && verdicts.get(na) == Some(&Verdict::Pass)
                    && verdicts.get(nb) == Some(&Verdict::Pass)
                {
                    out.push((na.min(nb).clone(), na.max(nb).clone()));
                }
            }
        }
        out.sort();
        out
    }
}

fn pairs_verdict(pool: &PoolState, i: usize) -> (Verdict, String) {
    let name = |j: usize| pool.nodes[j].as_str();
    match pool.state[i] {
        State::Good => (
            Verdict::Pass,
            format!("passed with {}", name(pool.passed_with[i].unwrap_or(i))),
        ),
        State::Bad => {
            let good: Vec<usize> = pool.failed_with[i]
                .iter()
                .copied()
                .filter(|&j| pool.state[j] == State::Good)
                .collect();
            let reason = match good.as_slice() {
                [peer] => format!(
                    "failed with {}, which passed with {}",
                    name(*peer),
                    name(pool.passed_with[*peer].unwrap_or(*peer))
                ),
                peers => {
                    let names: Vec<&str> = peers.iter().map(|&j| name(j)).collect();
                    format!(
                        "failed with {}, which passed with other nodes",
                        names.join(" and ")
                    )
                }
            };
            (Verdict::Fail, reason)
        }
        State::Suspect => {
            let peers: Vec<&str> = pool.failed_with[i].iter().map(|&j| name(j)).collect();
            (
                Verdict::Suspect,
                format!(
                    "failed with {}; no node of pool {} passed, so the fault cannot be placed",
                    peers.join(", "),
                    pool.name
                ),
            )
        }
        State::Inconclusive | State::Unjudged => (
            Verdict::Inconclusive,
            "every group it was in was inconclusive (not scheduled, or no result)".into(),
        ),
        State::Untested if pool.nodes.len() < 2 => (
            Verdict::Untested,
            format!("no other node in pool {} to pair with", pool.name),
        ),
        State::Untested => (Verdict::Untested, "no peer was free to test it with".into()),
    }
}

fn ring_verdict(pool: &PoolState, i: usize) -> (Verdict, String) {
    let failed = pool.failed_with[i].len();
    let judged = (0..pool.nodes.len())
        .filter(|&j| j != i)
        .filter(|&j| {
            matches!(
                pool.tested.get(&(i.min(j), i.max(j))),
                Some(Outcome::Pass | Outcome::Fail)
            )
        })
        .count();
    if pool.nodes.len() < 2 {
        return (
            Verdict::Untested,
            format!("no other node in pool {} to pair with", pool.name),
        );
    }
    match (failed, judged) {
        (_, 0) => (
            Verdict::Inconclusive,
            "every pair it was in was inconclusive".into(),
        ),
        (0, n) => (Verdict::Pass, format!("passed with all {n} peers")),
        (1, 1) => (
            Verdict::Suspect,
            format!(
                "failed with {}, its only peer; the fault cannot be placed",
                pool.nodes[pool.failed_with[i][0]]
            ),
        ),
        (f, n) if 2 * f > n => (Verdict::Fail, format!("failed with {f} of {n} peers")),
        (f, n) => (
            Verdict::Pass,
            format!(
                "passed with {} of {n} peers; the {f} failures are put on the peers or links",
                n - f
            ),
        ),
    }
}

fn full_verdict(pool: &PoolState) -> (Verdict, String) {
    let n = pool.nodes.len();
    match pool.full {
        _ if n < 2 => (
            Verdict::Untested,
            format!("no other node in pool {} to test with", pool.name),
        ),
        Some(Outcome::Pass) => (Verdict::Pass, format!("the {n}-node group passed")),
        Some(Outcome::Fail) => (
            Verdict::Suspect,
            format!("the {n}-node group failed; run --mode pairs to find the node"),
        ),
        Some(Outcome::Inconclusive) => (
            Verdict::Inconclusive,
            format!("the {n}-node group was inconclusive"),
        ),
        None => (Verdict::Untested, "not run".into()),
    }
}

/// Round-robin by the circle method: n−1 rounds (n even) or n rounds (n odd, one node sits
/// out each round), every unordered pair exactly once.
pub fn circle_rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return vec![];
    }
    // With an odd count a phantom slot `n` makes it even; its partner sits the round out.
    let slots = if n.is_multiple_of(2) { n } else { n + 1 };
    let mut ring: Vec<usize> = (0..slots).collect();
    let mut rounds = Vec::with_capacity(slots - 1);
    for _ in 0..slots - 1 {
        let round = (0..slots / 2)
            .map(|k| (ring[k], ring[slots - 1 - k]))
            .filter(|&(a, b)| a < n && b < n)
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        rounds.push(round);
        // Keep slot 0 fixed, rotate the rest by one.
        ring[1..].rotate_right(1);
    }
    rounds
}

/// Fisher–Yates with splitmix64: reproducible from the seed, no dependency.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `has_next_round` says what `next_round` will give, and takes nothing: all pass in
    /// round 1, no round follows; a failure in round 1, an isolation round follows.
    #[test]
    fn has_next_round_peeks_without_taking() {
        for (fail, more) in [(false, false), (true, true)] {
            let pool = Pool {
                name: "p".into(),
                nodes: (0..4).map(|i| format!("n{i}")).collect(),
            };
            let mut planner = Planner::new(Mode::Pairs, vec![pool], None);
            assert!(planner.has_next_round());
            let round = planner.next_round().unwrap();
            assert_eq!(round.number, 1);
            for (k, g) in round.groups.iter().enumerate() {
                let outcome = if fail && k == 0 {
                    Outcome::Fail
                } else {
                    Outcome::Pass
                };
                planner.record(g, outcome);
            }
            assert_eq!(planner.has_next_round(), more, "fail {fail}");
            assert_eq!(planner.has_next_round(), more, "asked twice");
            assert_eq!(planner.next_round().map(|r| r.number), more.then_some(2));
        }
    }
}
