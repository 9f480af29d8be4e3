//! Names and labels of the objects a run creates.
//!
//! Names never contain node names, so they are valid whatever the nodes are called:
//! `netcheck-<run>` (anchor ConfigMap and token Secret) and `netcheck-<run>-g<seq>` (Service of
//! group `seq`) and `netcheck-<run>-g<seq>-<rank>` (the Job of each rank, and its pod's hostname). All are
//! DNS-1123 labels that also start with a letter (DNS-1035, as Services require), and the
//! longest (a pod hostname of group 99 999, index 9 999) is 32 characters. Node names travel in
//! annotations, where any string is fine.

/// Label keys and values shared by every object of a run.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const RUN_LABEL: &str = "netcheck.io/run";
pub const GROUP_LABEL: &str = "netcheck.io/group";
pub const ROUND_LABEL: &str = "netcheck.io/round";
/// Label on a rank's Job and pod: the node rank (each rank has its own Job, pinned to its node).
pub const RANK_LABEL: &str = "netcheck.io/rank";
/// Annotation on Jobs and pods: the group's nodes, comma-separated, in planning order.
pub const NODES_ANNOTATION: &str = "netcheck.io/nodes";
/// Annotation on Jobs and pods: the pool (instance type and zone) the group belongs to.
pub const POOL_ANNOTATION: &str = "netcheck.io/pool";
/// Set by the Job controller on every pod of an Indexed Job.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
pub const TOOL: &str = "netcheck";

/// The one container of every pod.
pub const CONTAINER: &str = "netcheck";
/// Key of the rendezvous token in the run's Secret.
pub const TOKEN_KEY: &str = "token";

/// A fresh run id: 6 lowercase hex digits (24 random bits).
pub fn new_run_id() -> String {
    let mut bytes = [0u8; 3];
    // getrandom fails only without an OS entropy source; the clock is then unique enough.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        bytes.copy_from_slice(&nanos.to_le_bytes()[..3]);
    }
    hex(&bytes)
}

/// A fresh rendezvous token: 128 random bits as 32 hex digits.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A run id the user chose is safe in names and label values.
pub fn valid_run_id(id: &str) -> bool {
    (1..=12).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `netcheck-<run>`: the anchor ConfigMap and the token Secret.
pub fn anchor(run: &str) -> String {
    format!("{TOOL}-{run}")
}

/// `netcheck-<run>-g<seq>`: the Job and the headless Service of one group.
pub fn group(run: &str, seq: u32) -> String {
    format!("{TOOL}-{run}-g{seq}")
}

/// The hostname of the pod of rank `index` (set in its pod spec), also the name of the rank's
/// Job: `netcheck-<run>-g<seq>-<rank>`.
pub fn pod_hostname(group_name: &str, index: usize) -> String {
    format!("{group_name}-{index}")
}

/// The Job of one rank of a group (one Job per rank, each pinned to its node).
pub fn rank_job(group_name: &str, index: usize) -> String {
    pod_hostname(group_name, index)
}

/// `<job>-0.<service>.<namespace>.svc`: rank 0's DNS name through the headless Service.
pub fn rank0_host(group_name: &str, namespace: &str) -> String {
    format!(
        "{}.{group_name}.{namespace}.svc",
        pod_hostname(group_name, 0)
    )
}

/// `netcheck.io/run=<run>`: every object of the run.
pub fn run_selector(run: &str) -> String {
    format!("{RUN_LABEL}={run}")
}

/// A DNS-1123 label: 1–63 of `a-z0-9-`, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=63).contains(&b.len())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 subdomain (the names of Secrets and most objects): at most 253 characters,
/// DNS-1123 labels joined by dots.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A label value: at most 63 of `A-Za-z0-9-_.`, alphanumeric at both ends (or empty).
pub fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b.len() <= 63
            && b.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels_even_at_the_limits() {
        let run = "abcdef012345";
        assert!(valid_run_id(run));
        let g = group(run, 99_999);
        for name in [anchor(run), g.clone(), pod_hostname(&g, 9_999)] {
            assert!(is_dns1123_label(&name), "{name}");
            assert!(
                name.as_bytes()[0].is_ascii_lowercase(),
                "{name} starts with a letter"
            );
        }
        assert_eq!(
            rank0_host("netcheck-ab12cd-g3", "gpu"),
            "netcheck-ab12cd-g3-0.netcheck-ab12cd-g3.gpu.svc"
        );
    }

    #[test]
    fn run_ids_are_fresh_hex() {
        let a = new_run_id();
        assert!(valid_run_id(&a) && a.len() == 6, "{a}");
        assert_eq!(new_token().unwrap().len(), 32);
        assert!(!valid_run_id("Has-Caps"));
        assert!(!valid_run_id(""));
    }

    #[test]
    fn label_checks() {
        assert!(is_label_value("g6.12xlarge"));
        assert!(!is_label_value("-x"));
        assert!(!is_dns1123_label("ip-10-0-0-1.ec2.internal"));
        assert!(is_dns1123_label("a-1"));
        assert!(is_dns1123_subdomain("ecr-regcred.v2"));
        assert!(!is_dns1123_subdomain("Regcred"));
        assert!(!is_dns1123_subdomain("a..b"));
    }
}
