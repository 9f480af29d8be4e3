//! `netcheck launch --dry-run`: the objects of the first round as kubectl-ready YAML, built
//! from the flags alone (no cluster is read, so node counts come from `--gpus-per-node` and
//! `--efa-per-node`).

use crate::launch::plan::{Mode, Planner, Pool};

use super::launcher::Settings;
use super::manifest::{self, GroupSpec};
use super::names;
use super::nodes::{EFA_HUGEPAGES_BYTES, PodResources};

/// The anchor ConfigMap, the token Secret, then a Job per rank and a Service per group of round 1.
/// Later rounds of `pairs` mode depend on results, so only their existence is mentioned.
pub fn render(settings: &Settings, nodes: &[String], gpus: u32, efa: u32, token: &str) -> String {
    let spec = &settings.spec;
    let resources = PodResources {
        gpus,
        efa,
        hugepages_bytes: settings.requirements.hugepages_bytes.unwrap_or(if efa > 0 {
            EFA_HUGEPAGES_BYTES
        } else {
            0
        }),
        memory_bytes: settings.requirements.memory_bytes,
    };
    let pool = Pool {
        name: "dry-run".into(),
        nodes: nodes.to_vec(),
    };
    let mut planner = Planner::new(settings.mode, vec![pool.clone()], settings.seed);
    let round = planner.next_round();
    let expect = match settings.expect.as_deref() {
        Some("any") => None,
        Some(e) => Some(e.to_string()),
        None if efa > 0 => Some("efa".into()),
        None => None,
    };
    let mut docs = vec![
        manifest::to_yaml(&manifest::anchor_config_map(
            spec,
            serde_json::json!({"run": spec.run, "mode": settings.mode.as_str(), "dry_run": true})
                .to_string(),
        )),
        manifest::to_yaml(&manifest::token_secret(spec, token, None)),
    ];
    let groups = round.as_ref().map(|r| r.groups.as_slice()).unwrap_or(&[]);
    let sitting_out: String = round
        .as_ref()
        .map(|r| r.sitting_out_lines(std::slice::from_ref(&pool)))
        .unwrap_or_default()
        .iter()
        .map(|l| format!("# {l}\n"))
        .collect();
    for (k, g) in groups.iter().enumerate() {
        let group = GroupSpec {
            seq: k as u32 + 1,
            round: 1,
            pool: "dry-run".into(),
            nodes: g.nodes.clone(),
            resources: resources.clone(),
            expect: expect.clone(),
        };
        for job in manifest::group_jobs(spec, &group, None) {
            docs.push(manifest::to_yaml(&job));
        }
        docs.push(manifest::to_yaml(&manifest::group_service(
            spec, &group, None,
        )));
    }
    let later = match settings.mode {
        Mode::Pairs => "later rounds re-pair the nodes of failing pairs and depend on the results",
        Mode::Ring => "later rounds of the ring follow the same pattern with other pairs",
        Mode::Full => "there are no later rounds",
    };
    let efa_note = if settings.requirements.efa.is_none() {
        "# --efa-per-node not given: these pods request no EFA devices and no huge pages and \
         expect no transport; on EFA nodes pass it (32 on p5.48xlarge).\n"
    } else {
        ""
    };
    format!(
        "# netcheck launch --dry-run: run {run}, mode {mode}, round 1 ({groups} group(s)); {later}.\n\
         # {startup}\n\
         # Create: kubectl create -f -   (deploy/rbac.yaml grants create, not the patch that apply needs)\n\
         # The Secret's token is redacted: put a random value there (e.g. `openssl rand -hex 16`).\n\
         {efa_note}\
         # Remove: kubectl delete -n {ns} configmap,secret,job,service -l {selector}\n\
         # Without the launcher nothing collects results: read them with kubectl logs.\n\
         {sitting_out}---\n{body}",
        run = spec.run,
        startup = startup_line(spec),
        mode = settings.mode.as_str(),
        groups = groups.len(),
        ns = spec.namespace,
        selector = names::run_selector(&spec.run),
        body = docs.join("---\n"),
    )
}

/// How the pods get netcheck and start it, in words, for the header.
fn startup_line(spec: &manifest::RunSpec) -> String {
    use manifest::Entrypoint;
    let from = match &spec.image_opts.netcheck_image {
        Some(image) => format!(
            "netcheck: copied from {image} by init container {} into {}, run in {}",
            manifest::INIT_CONTAINER,
            manifest::INJECT_DIR,
            spec.image
        ),
        None => format!("netcheck: from {}'s PATH (no --netcheck-image)", spec.image),
    };
    let start = match spec.image_opts.entrypoint {
        Entrypoint::Keep => "through the image's own ENTRYPOINT (--entrypoint keep: args only)",
        Entrypoint::Bypass => "replacing the image's ENTRYPOINT (--entrypoint bypass)",
    };
    format!("{from}, started {start}")
}
