//! Where each rank runs: which GPU of this host, and which node NCCL should see it on. Nodes
//! are real (`--nnodes`, one launcher per node) or simulated on one host by giving ranks
//! different `NCCL_HOSTID` values (`--simulate-nodes`, optionally `--gpus-per-node`).
//!
//! Global ranks are numbered node by node: rank = node × ranks per node + local rank, the
//! order NCCL's own `localRank` follows, so the launch layout and NCCL's view can be compared.

/// `1 GPU`, `8 GPUs`.
fn gpus_word(n: u32) -> String {
    if n == 1 {
        "1 GPU".into()
    } else {
        format!("{n} GPUs")
    }
}

/// One rank's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub rank: u32,
    /// CUDA device index on this host.
    pub gpu: u32,
    pub node: u32,
    pub local_rank: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Ranks in the whole job.
    pub world: u32,
    /// Ranks this launcher starts, from `first_rank` on.
    pub local: u32,
    pub first_rank: u32,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// One launcher per real node, `per_node` GPUs each.
    Real { per_node: u32 },
    /// This host's GPUs split into `nodes` groups (the first groups get the extra GPU when
    /// the split is uneven).
    Split { nodes: u32 },
    /// `nodes` simulated nodes of `per_node` ranks, each on GPUs 0..per_node-1: the nodes
    /// share this host's GPUs.
    Shared { nodes: u32, per_node: u32 },
}

impl Layout {
    /// Checks the flags against this host's GPU count; the error is a usage message.
    pub fn new(
        host_gpus: u32,
        gpus: Option<u32>,
        simulate_nodes: Option<u32>,
        gpus_per_node: Option<u32>,
        nnodes: u32,
        node_rank: u32,
    ) -> Result<Layout, String> {
        if let Some(g) = gpus_per_node {
            let Some(nodes) = simulate_nodes else {
                return Err("--gpus-per-node needs --simulate-nodes".into());
            };
            if g == 0 || g > host_gpus {
                return Err(format!(
                    "--gpus-per-node {g} gives each simulated node {g} ranks on GPUs 0 to {}; this host has {}: pass --gpus-per-node {} or less",
                    g.saturating_sub(1),
                    gpus_word(host_gpus),
                    host_gpus.max(1)
                ));
            }
            if nodes < 2 || nnodes > 1 {
                return Err(format!(
                    "--simulate-nodes {nodes} with --gpus-per-node needs 2 or more nodes on one host"
                ));
            }
            let world = nodes * g;
            return Ok(Layout {
                world,
                local: world,
                first_rank: 0,
                kind: Kind::Shared { nodes, per_node: g },
            });
        }
        let local = gpus.unwrap_or(host_gpus);
        if local == 0 || local > host_gpus {
            return Err(if host_gpus == 0 {
                format!("--gpus {local}: this host has 0 GPUs")
            } else if local == 0 {
                format!(
                    "--gpus 0: a run needs at least 1 GPU; this host has {}",
                    gpus_word(host_gpus)
                )
            } else {
                format!(
                    "--gpus {local}: this host has {}; pass --gpus {host_gpus} or less, or leave it out to use them all",
                    gpus_word(host_gpus)
                )
            });
        }
        let world = nnodes * local;
        let kind = match simulate_nodes {
            Some(n) if n < 2 => {
                return Err(format!(
                    "--simulate-nodes {n}: a simulated job needs 2 or more nodes"
                ));
            }
            Some(n) if n > world => {
                return Err(format!(
                    "--simulate-nodes {n} puts each node's ranks on GPUs of their own; this host has {}: add --gpus-per-node 1 to let the {n} nodes share {}",
                    gpus_word(world),
                    if world == 1 { "it" } else { "them" }
                ));
            }
            Some(nodes) => Kind::Split { nodes },
            None => Kind::Real { per_node: local },
        };
        Ok(Layout {
            world,
            local,
            first_rank: node_rank * local,
            kind,
        })
    }

    /// The place of global rank `rank`.
    pub fn place(&self, rank: u32) -> Place {
        match self.kind {
            Kind::Real { per_node } => Place {
                rank,
                gpu: rank % per_node,
                node: rank / per_node,
                local_rank: rank % per_node,
            },
            Kind::Shared { per_node, .. } => Place {
                rank,
                gpu: rank % per_node,
                node: rank / per_node,
                local_rank: rank % per_node,
            },
            Kind::Split { nodes } => {
                let node = (u64::from(rank) * u64::from(nodes) / u64::from(self.world)) as u32;
                // The first rank r of node k is the smallest with r·nodes/world ≥ k.
                let first = (u64::from(node) * u64::from(self.world)).div_ceil(u64::from(nodes));
                Place {
                    rank,
                    gpu: rank,
                    node,
                    local_rank: rank - first as u32,
                }
            }
        }
    }

    /// The ranks this launcher starts.
    pub fn here(&self) -> impl Iterator<Item = Place> + '_ {
        (self.first_rank..self.first_rank + self.local).map(|r| self.place(r))
    }

    /// Simulated nodes, if any (their ranks get `NCCL_HOSTID` values).
    pub fn simulated_nodes(&self) -> Option<u32> {
        match self.kind {
            Kind::Real { .. } => None,
            Kind::Split { nodes } | Kind::Shared { nodes, .. } => Some(nodes),
        }
    }

    /// Whether several ranks use one GPU (simulated nodes of `--gpus-per-node`).
    pub fn shares_gpus(&self) -> bool {
        matches!(self.kind, Kind::Shared { .. })
    }

    /// Ranks on the node of `rank`.
    pub fn ranks_on_node_of(&self, rank: u32) -> u32 {
        let node = self.place(rank).node;
        (0..self.world)
            .filter(|&r| self.place(r).node == node)
            .count() as u32
    }

    /// `2 simulated nodes × 2 ranks, sharing 2 GPUs` and the like, for the start-up line.
    pub fn describe(&self, nnodes: u32) -> String {
        match self.kind {
            Kind::Real { .. } => format!("{} rank(s) on {nnodes} node(s)", self.world),
            Kind::Split { nodes } => format!(
                "{} rank(s) on {nodes} simulated nodes (NCCL_HOSTID)",
                self.world
            ),
            Kind::Shared { nodes, per_node } => format!(
                "{} rank(s) on {nodes} simulated nodes × {per_node} (NCCL_HOSTID; the nodes share GPUs 0..{})",
                self.world,
                per_node - 1
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(l: &Layout) -> Vec<(u32, u32, u32, u32)> {
        l.here()
            .map(|p| (p.rank, p.gpu, p.node, p.local_rank))
            .collect()
    }

    #[test]
    fn one_host_all_gpus() {
        let l = Layout::new(2, None, None, None, 1, 0).unwrap();
        assert_eq!(places(&l), vec![(0, 0, 0, 0), (1, 1, 0, 1)]);
        assert_eq!(l.simulated_nodes(), None);
    }

    #[test]
    fn real_nodes_number_ranks_node_by_node() {
        let l = Layout::new(8, None, None, None, 4, 2).unwrap();
        assert_eq!(l.world, 32);
        let p: Vec<_> = places(&l);
        assert_eq!(p.first(), Some(&(16, 0, 2, 0)));
        assert_eq!(p.last(), Some(&(23, 7, 2, 7)));
    }

    #[test]
    fn simulated_split_of_eight_gpus() {
        let l = Layout::new(8, None, Some(2), None, 1, 0).unwrap();
        for p in l.here() {
            assert_eq!(p.gpu, p.rank, "each rank keeps its own GPU");
            assert_eq!(p.rank, p.node * 4 + p.local_rank);
        }
        assert_eq!(l.ranks_on_node_of(5), 4);
    }

    #[test]
    fn uneven_split_still_numbers_local_ranks_from_zero() {
        let l = Layout::new(3, None, Some(2), None, 1, 0).unwrap();
        assert_eq!(places(&l), vec![(0, 0, 0, 0), (1, 1, 0, 1), (2, 2, 1, 0)]);
    }

    #[test]
    fn shared_gpus_give_two_nodes_of_two_on_two_gpus() {
        let l = Layout::new(2, None, Some(2), Some(2), 1, 0).unwrap();
        assert_eq!(
            places(&l),
            vec![(0, 0, 0, 0), (1, 1, 0, 1), (2, 0, 1, 0), (3, 1, 1, 1)]
        );
        assert_eq!(l.world, 4);
        assert_eq!(l.simulated_nodes(), Some(2));
        assert!(l.shares_gpus());
        assert!(
            !Layout::new(2, None, Some(2), None, 1, 0)
                .unwrap()
                .shares_gpus()
        );
    }

    #[test]
    fn every_rank_maps_as_node_times_per_node_plus_local_rank() {
        for host in 1..=8 {
            for nodes in 2..=4 {
                for g in 1..=host {
                    let l = Layout::new(host, None, Some(nodes), Some(g), 1, 0).unwrap();
                    for p in l.here() {
                        assert_eq!(p.rank, p.node * g + p.local_rank);
                        assert!(p.gpu < host);
                    }
                }
            }
        }
    }

    #[test]
    fn impossible_layouts_say_which_flag() {
        let err = |r: Result<Layout, String>| r.unwrap_err();
        assert!(err(Layout::new(2, Some(3), None, None, 1, 0)).contains("--gpus 3"));
        assert!(err(Layout::new(2, None, Some(3), None, 1, 0)).contains("--simulate-nodes 3"));
        assert!(err(Layout::new(2, None, Some(1), None, 1, 0)).contains("2 or more nodes"));
        // One GPU: the message names the flag that makes the layout possible.
        let one = err(Layout::new(1, None, Some(2), None, 1, 0));
        assert!(one.contains("this host has 1 GPU"), "{one}");
        assert!(one.contains("add --gpus-per-node 1"), "{one}");
        assert!(Layout::new(1, None, Some(2), Some(1), 1, 0).is_ok());
        assert!(err(Layout::new(2, None, Some(2), Some(3), 1, 0)).contains("--gpus-per-node 3"));
        assert!(err(Layout::new(2, None, None, Some(1), 1, 0)).contains("--simulate-nodes"));
        assert!(err(Layout::new(0, None, None, None, 1, 0)).contains("0 GPU"));
        assert!(err(Layout::new(1, Some(0), None, None, 1, 0)).contains("at least 1 GPU"));
    }
}
