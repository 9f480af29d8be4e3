//! Planner properties: every node is tested, rounds never reuse a node, one or two bad nodes
//! are named from the round results alone, and the plan always ends. The speed of a 1 000-node
//! plan is measured by `benches/launch_plan.rs`, not here.

use std::collections::{HashMap, HashSet};

use netcheck::launch::plan::{Mode, Outcome, Planner, Pool, Round, Verdict};
use proptest::prelude::*;

fn pool(n: usize) -> Pool {
    Pool {
        name: "p5.48xlarge/us-west-2a".into(),
        nodes: (0..n)
            .map(|i| format!("ip-10-0-{}-{}", i / 200, i % 200))
            .collect(),
    }
}

/// Drives the planner to the end with `outcome` deciding each group; returns the rounds run
/// and each node's verdict.
fn drive(
    mut planner: Planner,
    mut outcome: impl FnMut(&[String]) -> Outcome,
) -> (Vec<Round>, HashMap<String, Verdict>) {
    let mut rounds = vec![];
    while let Some(round) = planner.next_round() {
        assert!(rounds.len() < 1000, "the plan does not end");
        for g in &round.groups {
            planner.record(g, outcome(&g.nodes));
        }
        rounds.push(round);
    }
    let verdicts = planner
        .verdicts()
        .into_iter()
        .map(|v| (v.node, v.verdict))
        .collect();
    (rounds, verdicts)
}

fn check_rounds(rounds: &[Round], nodes: &[String]) -> Result<(), TestCaseError> {
    let mut tested = HashSet::new();
    let mut pairs = HashSet::new();
    for round in rounds {
        let mut busy = HashSet::new();
        for g in &round.groups {
            prop_assert_eq!(g.nodes.len(), 2);
            for n in &g.nodes {
                prop_assert!(
                    busy.insert(n.clone()),
                    "{} twice in round {}",
                    n,
                    round.number
                );
                tested.insert(n.clone());
            }
            let mut key = g.nodes.clone();
            key.sort();
            prop_assert!(pairs.insert(key), "a pair ran twice");
        }
    }
    prop_assert_eq!(tested.len(), nodes.len(), "every node is tested");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn one_bad_node_is_named(n in 3usize..120, bad in any::<prop::sample::Index>(), seed in proptest::option::of(any::<u64>())) {
        let pool = pool(n);
        let bad = pool.nodes[bad.index(n)].clone();
        let planner = Planner::new(Mode::Pairs, vec![pool.clone()], seed);
        let (rounds, verdicts) = drive(planner, |g| if g.contains(&bad) { Outcome::Fail } else { Outcome::Pass });
        check_rounds(&rounds, &pool.nodes)?;
        for node in &pool.nodes {
            let expected = if *node == bad { Verdict::Fail } else { Verdict::Pass };
            prop_assert_eq!(verdicts[node], expected, "{}", node);
        }
        prop_assert!(rounds.len() <= 3, "sweep, isolation, and the odd node: {} rounds", rounds.len());
    }

    #[test]
    fn two_bad_nodes_are_named(n in 4usize..60, a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let pool = pool(n);
        let (a, b) = (a.index(n), b.index(n));
        prop_assume!(a != b);
        let bad = [pool.nodes[a].clone(), pool.nodes[b].clone()];
        let planner = Planner::new(Mode::Pairs, vec![pool.clone()], None);
        let (rounds, verdicts) = drive(planner, |g| if g.iter().any(|x| bad.contains(x)) { Outcome::Fail } else { Outcome::Pass });
        check_rounds(&rounds, &pool.nodes)?;
        for node in &pool.nodes {
            let expected = if bad.contains(node) { Verdict::Fail } else { Verdict::Pass };
            prop_assert_eq!(verdicts[node], expected, "{}", node);
        }
    }

    /// Whatever the outcomes (flaky links, inconclusive groups), the plan ends, tests every node
    /// of a pool of two or more, never repeats a pair, and only passes nodes that passed a group.
    #[test]
    fn any_outcomes_end_in_a_consistent_plan(n in 2usize..40, outcomes in proptest::collection::vec(0u8..3, 200)) {
        let pool = pool(n);
        let mut k = 0;
        let mut passed = HashSet::new();
        let planner = Planner::new(Mode::Pairs, vec![pool.clone()], None);
        let (rounds, verdicts) = drive(planner, |g| {
            k += 1;
            let o = [Outcome::Pass, Outcome::Fail, Outcome::Inconclusive][outcomes[k % outcomes.len()] as usize];
            if o == Outcome::Pass {
                passed.extend(g.iter().cloned());
            }
            o
        });
        check_rounds(&rounds, &pool.nodes)?;
        for (node, v) in &verdicts {
            if *v == Verdict::Pass {
                prop_assert!(passed.contains(node), "{} passes without a passing group", node);
            }
        }
    }

    #[test]
    fn ring_covers_every_pair_and_names_one_bad_node(n in 3usize..40, bad in any::<prop::sample::Index>()) {
        let pool = pool(n);
        let bad = pool.nodes[bad.index(n)].clone();
        let planner = Planner::new(Mode::Ring, vec![pool.clone()], None);
        let (rounds, verdicts) = drive(planner, |g| if g.contains(&bad) { Outcome::Fail } else { Outcome::Pass });
        check_rounds(&rounds, &pool.nodes)?;
        let pairs: usize = rounds.iter().map(|r| r.groups.len()).sum();
        prop_assert_eq!(pairs, n * (n - 1) / 2);
        prop_assert_eq!(rounds.len(), if n % 2 == 0 { n - 1 } else { n });
        for node in &pool.nodes {
            let expected = if *node == bad { Verdict::Fail } else { Verdict::Pass };
            prop_assert_eq!(verdicts[node], expected);
        }
    }
}

#[test]
fn pools_are_planned_side_by_side_and_never_mixed() {
    let a = Pool {
        name: "p5".into(),
        nodes: (0..4).map(|i| format!("a{i}")).collect(),
    };
    let b = Pool {
        name: "g6".into(),
        nodes: (0..6).map(|i| format!("b{i}")).collect(),
    };
    let mut planner = Planner::new(Mode::Pairs, vec![a, b], None);
    let round = planner.next_round().unwrap();
    assert_eq!(
        round.groups.len(),
        5,
        "both pools' sweeps run in the same round"
    );
    for g in &round.groups {
        let first = g.nodes[0].chars().next();
        assert!(
            g.nodes.iter().all(|n| n.chars().next() == first),
            "{:?}",
            g.nodes
        );
    }
}
