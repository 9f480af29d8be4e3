//! The objects `launch` creates: golden YAML for two typical groups (regenerate with
//! `NETCHECK_BLESS=1 cargo test launch_manifest` and review the diff), and properties that hold
//! whatever the nodes are called.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use netcheck::launch::kube::manifest::{self, GroupSpec, RunSpec, Shm};
use netcheck::launch::kube::names::{is_dns1123_label, is_label_value};
use netcheck::launch::kube::nodes::{PodResources, parse_toleration};
use proptest::prelude::*;

use crate::util::{container_args, fixture, run_spec};

fn spec() -> RunSpec {
    run_spec()
}

fn p5_pair() -> GroupSpec {
    GroupSpec {
        seq: 1,
        round: 1,
        pool: "p5.48xlarge/us-west-2a".into(),
        nodes: vec![
            "ip-10-1-2-3.us-west-2.compute.internal".into(),
            "ip-10-1-2-4.us-west-2.compute.internal".into(),
        ],
        resources: PodResources {
            gpus: 8,
            efa: 32,
            hugepages_bytes: 5120 << 20,
            memory_bytes: 48 << 30,
        },
        expect: Some("efa".into()),
    }
}

fn owner(
    kind: &str,
    name: &str,
    uid: &str,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    let api = if kind == "Job" { "batch/v1" } else { "v1" };
    manifest::owner_reference(
        api,
        kind,
        &ObjectMeta {
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
    )
}

fn check_golden(name: &str, yaml: &str) {
    let path = fixture(&format!("kube/golden/{name}"));
    if std::env::var_os("NETCHECK_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, yaml).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (create it with NETCHECK_BLESS=1)", path.display()));
    if expected != yaml {
        panic!(
            "{} differs from what the builders produce now:\n{yaml}",
            path.display()
        );
    }
}

#[test]
fn golden_efa_pair() {
    let spec = spec();
    let group = p5_pair();
    let docs = [
        manifest::to_yaml(&manifest::anchor_config_map(
            &spec,
            r#"{"run":"golden"}"#.into(),
        )),
        manifest::to_yaml(&manifest::token_secret(
            &spec,
            "00112233445566778899aabbccddeeff",
            owner("ConfigMap", "netcheck-golden", "uid-anchor"),
        )),
        manifest::group_jobs(
            &spec,
            &group,
            owner("ConfigMap", "netcheck-golden", "uid-anchor"),
        )
        .iter()
        .map(manifest::to_yaml)
        .collect::<Vec<_>>()
        .join("---\n"),
        manifest::to_yaml(&manifest::group_service(
            &spec,
            &group,
            owner("Job", "netcheck-golden-g1-0", "uid-job"),
        )),
    ];
    check_golden("efa-pair.yaml", &docs.join("---\n"));
}

#[test]
fn golden_full_group_without_efa() {
    let mut spec = spec();
    spec.strict_net = false;
    spec.ipc_lock = false;
    spec.shm = Shm::Host;
    spec.ttl_secs = None;
    spec.service_account = Some("netcheck-worker".into());
    spec.tolerations
        .push(parse_toleration("dedicated=gpu:NoSchedule").unwrap());
    spec.env
        .push(("NCCL_SOCKET_IFNAME".into(), "^lo,docker".into()));
    let group = GroupSpec {
        seq: 7,
        round: 1,
        pool: "g6.12xlarge/us-east-1b".into(),
        nodes: vec!["gpu-a".into(), "gpu-b".into(), "gpu-c".into()],
        resources: PodResources {
            gpus: 4,
            efa: 0,
            hugepages_bytes: 0,
            memory_bytes: 16 << 30,
        },
        expect: None,
    };
    let docs = [
        manifest::group_jobs(&spec, &group, None)
            .iter()
            .map(manifest::to_yaml)
            .collect::<Vec<_>>()
            .join("---\n"),
        manifest::to_yaml(&manifest::group_service(&spec, &group, None)),
    ];
    check_golden("full-no-efa.yaml", &docs.join("---\n"));
}

#[test]
fn strict_mode_pins_nccl_net_unless_the_user_set_it() {
    let job = |spec: &RunSpec| {
        serde_json::to_value(manifest::rank_job(spec, &p5_pair(), 0, None)).unwrap()
    };
    let env_of =
        |v: &serde_json::Value| v["spec"]["template"]["spec"]["containers"][0]["env"].clone();
    let pinned = env_of(&job(&spec()));
    assert!(
        pinned
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "NCCL_NET" && e["value"] == "AWS Libfabric")
    );
    let mut own = spec();
    own.env.push(("NCCL_NET".into(), "Socket".into()));
    let env = env_of(&job(&own));
    let nets: Vec<&serde_json::Value> = env
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "NCCL_NET")
        .collect();
    assert_eq!(nets.len(), 1);
    assert_eq!(nets[0]["value"], "Socket");
}

#[test]
fn the_fabric_check_reaches_the_pod_command_and_opens_port_plus_one() {
    let ports = |v: &serde_json::Value| -> Vec<(String, i64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let number = p.get("containerPort").or(p.get("port")).unwrap();
                (
                    p["name"].as_str().unwrap().to_string(),
                    number.as_i64().unwrap(),
                )
            })
            .collect()
    };
    let pod = |spec: &RunSpec| {
        let job = serde_json::to_value(manifest::rank_job(spec, &p5_pair(), 0, None)).unwrap();
        job["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let service = |spec: &RunSpec| {
        serde_json::to_value(manifest::group_service(spec, &p5_pair(), None)).unwrap()["spec"]
            ["ports"]
            .clone()
    };

    // Off by default: no flag, one port.
    let plain = pod(&spec());
    let args = container_args(&plain);
    assert!(!args.contains(&"--fabric-check"), "{args:?}");
    assert_eq!(ports(&plain["ports"]), [("rdzv".to_string(), 29400)]);

    let mut with = spec();
    with.fabric_check = Some("efa".into());
    let container = pod(&with);
    let args = container_args(&container);
    let at = args
        .iter()
        .position(|a| *a == "--fabric-check")
        .expect("--fabric-check in the pod's args");
    assert_eq!(args[at + 1], "efa");
    // The workers' own flags (sweep, --timeout) still follow.
    assert_eq!(&args[args.len() - 2..], ["--timeout", "5m"]);
    let expected = [("rdzv".to_string(), 29400), ("fabric".to_string(), 29401)];
    assert_eq!(ports(&container["ports"]), expected);
    assert_eq!(ports(&service(&with)), expected);
}

proptest! {
    /// Whatever the nodes are called (any characters, any length) and however large the run,
    /// every name is a DNS label and every label value is valid; node names travel intact in
    /// the annotation and the node affinity.
    #[test]
    fn names_are_valid_whatever_the_node_names(
        nodes in proptest::collection::vec("\\PC{1,300}", 1..6),
        seq in 1u32..100_000,
        round in 1u32..10_000,
        run in "[a-z0-9]{1,12}",
    ) {
        let mut spec = spec();
        spec.run = run;
        let group = GroupSpec { seq, round, nodes: nodes.clone(), ..p5_pair() };
        let jobs: Vec<serde_json::Value> = manifest::group_jobs(&spec, &group, None)
            .iter()
            .map(|j| serde_json::to_value(j).unwrap())
            .collect();
        prop_assert_eq!(jobs.len(), nodes.len());
        let service = serde_json::to_value(manifest::group_service(&spec, &group, None)).unwrap();
        for object in jobs.iter().chain([&service]) {
            let name = object["metadata"]["name"].as_str().unwrap();
            prop_assert!(is_dns1123_label(name) && name.as_bytes()[0].is_ascii_lowercase(), "{}", name);
            for (_, value) in object["metadata"]["labels"].as_object().unwrap() {
                prop_assert!(is_label_value(value.as_str().unwrap()), "{}", value);
            }
        }
        for (rank, job) in jobs.iter().enumerate() {
            let template = &job["spec"]["template"];
            for (_, value) in template["metadata"]["labels"].as_object().unwrap() {
                prop_assert!(is_label_value(value.as_str().unwrap()));
            }
            prop_assert_eq!(template["metadata"]["labels"]["netcheck.io/rank"].as_str().unwrap(), rank.to_string());
            let host = template["spec"]["hostname"].as_str().unwrap();
            prop_assert!(is_dns1123_label(host));
            prop_assert_eq!(host, job["metadata"]["name"].as_str().unwrap());
            prop_assert_eq!(template["metadata"]["annotations"]["netcheck.io/nodes"].as_str().unwrap(), nodes.join(","));
            // Each rank pinned to its own node: one term, one value (the API server's rule).
            let terms = template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].as_array().unwrap();
            prop_assert_eq!(terms.len(), 1);
            let fields = terms[0]["matchFields"].as_array().unwrap();
            prop_assert_eq!(fields.len(), 1);
            prop_assert_eq!(fields[0]["values"].as_array().unwrap().len(), 1);
            prop_assert_eq!(fields[0]["values"][0].as_str().unwrap(), nodes[rank].as_str());
        }
    }
}

/// deploy/rbac.yaml grants what the launcher checks for, and nothing more (the cluster-wide
/// `list pods` is the one optional extra: without it preflight skips the GPUs-in-use check).
#[test]
fn rbac_grants_exactly_what_the_launcher_needs() {
    use netcheck::launch::kube::client::REQUIRED_ACCESS;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&text).unwrap();
    // (namespaced, group, resource, verb) for every rule of the Role and the ClusterRole.
    let mut granted = std::collections::BTreeSet::new();
    for doc in &docs {
        // `analyze --kube` has Roles of its own (tests/analyze_kube.rs checks them).
        if doc["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("netcheck-analyzer"))
        {
            continue;
        }
        let namespaced = match doc["kind"].as_str() {
            Some("Role") => true,
            Some("ClusterRole") => false,
            _ => continue,
        };
        for rule in doc["rules"].as_array().unwrap() {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        granted.insert((
                            namespaced,
                            group.as_str().unwrap().to_string(),
                            resource.as_str().unwrap().to_string(),
                            verb.as_str().unwrap().to_string(),
                        ));
                    }
                }
            }
        }
    }
    let mut needed = std::collections::BTreeSet::new();
    for a in REQUIRED_ACCESS {
        let resource = match a.subresource {
            Some(sub) => format!("{}/{sub}", a.resource),
            None => a.resource.to_string(),
        };
        needed.insert((
            a.namespaced,
            a.group.to_string(),
            resource,
            a.verb.to_string(),
        ));
    }
    let optional = (false, String::new(), "pods".to_string(), "list".to_string());
    let missing: Vec<_> = needed.difference(&granted).collect();
    let extra: Vec<_> = granted
        .difference(&needed)
        .filter(|g| **g != optional)
        .collect();
    assert!(missing.is_empty(), "deploy/rbac.yaml lacks {missing:?}");
    assert!(
        extra.is_empty(),
        "deploy/rbac.yaml grants more than needed: {extra:?}"
    );
}

/// The pods' container and the pod spec of a group's Job, as JSON.
fn pod_of(spec: &RunSpec) -> serde_json::Value {
    let job = serde_json::to_value(manifest::rank_job(spec, &p5_pair(), 0, None)).unwrap();
    job["spec"]["template"]["spec"].clone()
}

fn strings(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// By default the pods start through the image's ENTRYPOINT: `args` only, netcheck first (the
/// kubelet then runs ENTRYPOINT + args, or args alone where the image has no ENTRYPOINT);
/// `--entrypoint bypass` sets `command` as before.
#[test]
fn the_image_entrypoint_is_kept_unless_bypassed() {
    let pod = pod_of(&spec());
    let c = &pod["containers"][0];
    assert!(c.get("command").is_none(), "{c}");
    let args = strings(&c["args"]);
    assert_eq!(&args[..2], ["netcheck", "run"]);
    assert!(pod.get("initContainers").is_none());

    let mut bypass = spec();
    bypass.image_opts.entrypoint = manifest::Entrypoint::Bypass;
    let pod = pod_of(&bypass);
    let c = &pod["containers"][0];
    assert_eq!(strings(&c["command"]), ["netcheck"]);
    assert_eq!(strings(&c["args"])[0], "run");
}

/// `--netcheck-image`: an init container copies netcheck from the small image into an
/// emptyDir that the benchmark container (the training image) mounts read-only and runs it
/// from, through the image's entrypoint or not.
#[test]
fn netcheck_is_injected_through_an_init_container_and_a_shared_empty_dir() {
    let mut s = spec();
    s.image = "public.ecr.aws/deep-learning-containers/ray:train-ml-cuda-v1.1".into();
    s.image_opts.netcheck_image = Some("registry.example.com/netcheck:0.1.0".into());
    let pod = pod_of(&s);
    let init = &pod["initContainers"][0];
    assert_eq!(init["name"], manifest::INIT_CONTAINER);
    assert_eq!(init["image"], "registry.example.com/netcheck:0.1.0");
    let script = strings(&init["command"]).join(" ");
    assert!(
        script.contains(&format!(
            "cp {} {}",
            manifest::NETCHECK_IMAGE_BINARY,
            manifest::INJECTED_BINARY
        )) && script.contains(&format!("chmod 0755 {}", manifest::INJECTED_BINARY)),
        "{script}"
    );
    assert_eq!(init["volumeMounts"][0]["mountPath"], manifest::INJECT_DIR);
    assert!(init["volumeMounts"][0].get("readOnly").is_none());
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == init["volumeMounts"][0]["name"])
        .expect("the shared volume");
    assert!(volume["emptyDir"].is_object(), "{volume}");

    let c = &pod["containers"][0];
    assert_eq!(c["image"], s.image.as_str());
    assert!(c.get("command").is_none());
    assert_eq!(
        &strings(&c["args"])[..2],
        [manifest::INJECTED_BINARY, "run"]
    );
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the benchmark container mounts the shared volume");
    assert_eq!(mount["mountPath"], manifest::INJECT_DIR);
    assert_eq!(mount["readOnly"], true);
    assert!(manifest::INJECTED_BINARY.starts_with(&format!("{}/", manifest::INJECT_DIR)));

    s.image_opts.entrypoint = manifest::Entrypoint::Bypass;
    let c = &pod_of(&s)["containers"][0];
    assert_eq!(strings(&c["command"]), [manifest::INJECTED_BINARY]);
}

/// Non-root and read-only images: the pod runs as a non-root user with nothing to escalate,
/// every container's root filesystem is read-only, and every place netcheck writes (its --out
/// folder, /dev/shm, /tmp, the shared folder the init container fills) is a writable volume.
#[test]
fn non_root_read_only_pods_write_only_to_volumes() {
    let mut s = spec();
    s.ipc_lock = false;
    s.image_opts = manifest::ImageOptions {
        netcheck_image: Some("registry.example.com/netcheck:0.1.0".into()),
        pull_secrets: vec!["regcred".into(), "ecr".into()],
        run_as_non_root: true,
        run_as_user: Some(1000),
        read_only_root: true,
        ..Default::default()
    };
    let pod = pod_of(&s);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 1000);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(
        pod["imagePullSecrets"],
        serde_json::json!([{"name": "regcred"}, {"name": "ecr"}])
    );
    let volumes: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for c in [&pod["initContainers"][0], &pod["containers"][0]] {
        let sc = &c["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{c}");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{c}");
        assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"]);
        assert!(sc["capabilities"].get("add").is_none(), "{sc}");
        for m in c["volumeMounts"].as_array().unwrap() {
            assert!(volumes.contains(&m["name"].as_str().unwrap()), "{m}");
        }
    }
    let c = &pod["containers"][0];
    let writable: Vec<&str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("readOnly").is_none())
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    let args = strings(&c["args"]);
    let out = args[args.iter().position(|a| *a == "--out").unwrap() + 1];
    for path in [out, "/dev/shm", "/tmp"] {
        assert!(
            writable.contains(&path),
            "{path} not writable: {writable:?}"
        );
    }
    // IPC_LOCK stays added (and ALL dropped) when asked for.
    s.ipc_lock = true;
    let sc = &pod_of(&s)["containers"][0]["securityContext"];
    assert_eq!(strings(&sc["capabilities"]["add"]), ["IPC_LOCK"]);
    let init = &pod_of(&s)["initContainers"][0]["securityContext"];
    assert!(init["capabilities"].get("add").is_none(), "{init}");
}

#[test]
fn golden_injected_non_root_pair() {
    let mut s = spec();
    s.image = "public.ecr.aws/deep-learning-containers/ray:train-ml-cuda-v1.1".into();
    s.image_opts = manifest::ImageOptions {
        netcheck_image: Some("123456789012.dkr.ecr.us-west-2.amazonaws.com/netcheck:0.1.0".into()),
        pull_secrets: vec!["regcred".into()],
        run_as_non_root: true,
        run_as_user: Some(1000),
        read_only_root: true,
        ..Default::default()
    };
    check_golden(
        "injected-non-root.yaml",
        &manifest::to_yaml(&manifest::rank_job(&s, &p5_pair(), 0, None)),
    );
}
