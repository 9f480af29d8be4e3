//! Planner properties: every node is tested, rounds never reuse a node, one or two bad nodes
//! are named from the round results alone, and the plan always ends. The speed of a 1 000-node
//! plan is measured by `benches/launch_plan.rs`, not here.

use std::collections::{HashMap, HashSet};

use netcheck::launch::plan::{
    Group, Mode, Outcome, Planner, Pool, Purpose, Round, Verdict, circle_rounds,
};
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

/// Worked examples of the rules, one situation each.
mod examples {
    use super::*;

    fn named_pool(name: &str, n: usize) -> Pool {
        Pool {
            name: name.into(),
            nodes: (0..n).map(|i| format!("{name}-n{i:02}")).collect(),
        }
    }

    /// Runs the planner to the end; a group fails when it holds a node in `bad`.
    fn drive_failing(mut planner: Planner, bad: &[&str]) -> (Planner, Vec<Round>) {
        let mut rounds = vec![];
        while let Some(round) = planner.next_round() {
            for g in &round.groups {
                let fails = g.nodes.iter().any(|n| bad.contains(&n.as_str()));
                planner.record(g, if fails { Outcome::Fail } else { Outcome::Pass });
            }
            rounds.push(round);
        }
        (planner, rounds)
    }

    fn verdict(planner: &Planner, node: &str) -> Verdict {
        planner
            .verdicts()
            .into_iter()
            .find(|v| v.node == node)
            .unwrap()
            .verdict
    }

    #[test]
    fn circle_method_covers_every_pair_once() {
        for n in 2..12 {
            let rounds = circle_rounds(n);
            assert_eq!(rounds.len(), if n % 2 == 0 { n - 1 } else { n });
            let mut seen = HashSet::new();
            for round in &rounds {
                let mut busy = HashSet::new();
                for &(a, b) in round {
                    assert!(busy.insert(a) && busy.insert(b), "node twice in a round");
                    assert!(seen.insert((a, b)), "pair ({a},{b}) twice");
                }
            }
            assert_eq!(seen.len(), n * (n - 1) / 2);
        }
    }

    #[test]
    fn sweep_pairs_neighbours_and_leaves_the_odd_one_for_isolation() {
        let mut planner = Planner::new(Mode::Pairs, vec![named_pool("g6", 5)], None);
        let r1 = planner.next_round().unwrap();
        assert_eq!(r1.purpose, Purpose::Sweep);
        let names: Vec<String> = r1.groups.iter().map(Group::name).collect();
        assert_eq!(names, ["g6-n00+g6-n01", "g6-n02+g6-n03"]);
        for g in &r1.groups {
            planner.record(g, Outcome::Pass);
        }
        let r2 = planner.next_round().unwrap();
        assert_eq!(r2.purpose, Purpose::Isolate);
        assert_eq!(r2.groups.len(), 1);
        assert_eq!(r2.groups[0].nodes[0], "g6-n04");
        planner.record(&r2.groups[0].clone(), Outcome::Pass);
        assert!(planner.next_round().is_none());
        assert!(
            planner
                .verdicts()
                .iter()
                .all(|v| v.verdict == Verdict::Pass)
        );
    }

    #[test]
    fn one_bad_node_is_named_after_isolation() {
        let (planner, rounds) = drive_failing(
            Planner::new(Mode::Pairs, vec![named_pool("p5", 8)], None),
            &["p5-n05"],
        );
        assert_eq!(rounds.len(), 2, "sweep + one isolation round");
        assert_eq!(verdict(&planner, "p5-n05"), Verdict::Fail);
        assert_eq!(verdict(&planner, "p5-n04"), Verdict::Pass);
        let bad = planner
            .verdicts()
            .into_iter()
            .find(|v| v.node == "p5-n05")
            .unwrap();
        assert!(
            bad.reason.starts_with("failed with p5-n0"),
            "{}",
            bad.reason
        );
        assert!(planner.link_failures().is_empty());
    }

    #[test]
    fn without_good_nodes_suspects_are_repaired_among_themselves() {
        // Both sweep pairs fail (n01 and n02 bad): cross pairs (n00,n02) and (n01,n03) fail too,
        // then (n00,n03) passes and the isolation against them names both bad nodes.
        let (planner, _) = drive_failing(
            Planner::new(Mode::Pairs, vec![named_pool("a", 4)], None),
            &["a-n01", "a-n02"],
        );
        assert_eq!(verdict(&planner, "a-n00"), Verdict::Pass);
        assert_eq!(verdict(&planner, "a-n03"), Verdict::Pass);
        assert_eq!(verdict(&planner, "a-n01"), Verdict::Fail);
        assert_eq!(verdict(&planner, "a-n02"), Verdict::Fail);
    }

    #[test]
    fn two_nodes_that_fail_together_stay_suspects() {
        let (planner, _) = drive_failing(
            Planner::new(Mode::Pairs, vec![named_pool("x", 2)], None),
            &["x-n00"],
        );
        assert_eq!(verdict(&planner, "x-n00"), Verdict::Suspect);
        assert_eq!(verdict(&planner, "x-n01"), Verdict::Suspect);
    }

    #[test]
    fn a_lone_node_is_untested_and_pools_never_mix() {
        let (planner, rounds) = drive_failing(
            Planner::new(
                Mode::Pairs,
                vec![named_pool("a", 2), named_pool("b", 1)],
                None,
            ),
            &[],
        );
        for round in &rounds {
            for g in &round.groups {
                assert!(
                    g.nodes
                        .iter()
                        .all(|n| n.starts_with(&format!("{}-", ["a", "b"][g.pool])))
                );
            }
        }
        let v = planner.verdicts();
        assert_eq!(
            v.iter().find(|v| v.node == "b-n00").unwrap().verdict,
            Verdict::Untested
        );
    }

    #[test]
    fn link_failure_between_two_good_nodes_is_reported_as_a_pair() {
        let mut planner = Planner::new(Mode::Pairs, vec![named_pool("a", 4)], None);
        let r1 = planner.next_round().unwrap();
        for g in &r1.groups {
            planner.record(g, Outcome::Pass);
        }
        // A later failure between two nodes that passed does not condemn either.
        let g = Group {
            pool: 0,
            nodes: vec!["a-n00".into(), "a-n02".into()],
        };
        planner.record(&g, Outcome::Fail);
        assert_eq!(verdict(&planner, "a-n00"), Verdict::Pass);
        assert_eq!(planner.link_failures(), [("a-n00".into(), "a-n02".into())]);
    }

    #[test]
    fn inconclusive_with_a_good_peer_is_final() {
        let mut planner = Planner::new(Mode::Pairs, vec![named_pool("a", 3)], None);
        let r1 = planner.next_round().unwrap();
        planner.record(&r1.groups[0], Outcome::Pass);
        let r2 = planner.next_round().unwrap();
        planner.record(&r2.groups[0], Outcome::Inconclusive);
        assert!(planner.next_round().is_none());
        assert_eq!(verdict(&planner, "a-n02"), Verdict::Inconclusive);
    }

    #[test]
    fn ring_names_the_node_that_fails_with_most_peers() {
        let (planner, rounds) = drive_failing(
            Planner::new(Mode::Ring, vec![named_pool("r", 6)], None),
            &["r-n03"],
        );
        assert_eq!(rounds.len(), 5);
        assert_eq!(verdict(&planner, "r-n03"), Verdict::Fail);
        assert_eq!(verdict(&planner, "r-n00"), Verdict::Pass);
        assert!(planner.link_failures().is_empty());
    }

    #[test]
    fn full_mode_is_one_group_per_pool() {
        let mut planner = Planner::new(
            Mode::Full,
            vec![named_pool("a", 3), named_pool("b", 4)],
            None,
        );
        let r = planner.next_round().unwrap();
        assert_eq!(r.groups.len(), 2);
        assert_eq!(r.groups[1].nodes.len(), 4);
        planner.record(&r.groups[0], Outcome::Pass);
        planner.record(&r.groups[1], Outcome::Fail);
        assert!(planner.next_round().is_none());
        assert_eq!(verdict(&planner, "a-n00"), Verdict::Pass);
        assert_eq!(verdict(&planner, "b-n03"), Verdict::Suspect);
    }

    #[test]
    fn a_seed_shuffles_reproducibly() {
        let a = Planner::new(Mode::Pairs, vec![named_pool("a", 10)], Some(7)).next_round();
        let b = Planner::new(Mode::Pairs, vec![named_pool("a", 10)], Some(7)).next_round();
        let c = Planner::new(Mode::Pairs, vec![named_pool("a", 10)], None).next_round();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
