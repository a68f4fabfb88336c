//! The Helm chart, rendered by Helm 3 and Helm 4 themselves: lint, schema
//! refusals, the chart's own checks, NOTES, use as a subchart; the rendered
//! objects against the Kubernetes schemas and the prometheus-operator CRD,
//! each rendered config through `toolscore validate-config`, and the
//! objects' consistency as the API server and kubelet would need it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};
use toolscore::config::Config;

use super::tools::{Outcome, copy_dir, tools};
use super::{bound_ports, read, root, validate_config, yaml};

const CHART: &str = "deploy/helm/toolscore";
const RELEASE: &str = "toolscore";
pub(super) const NAMESPACE: &str = "observability";
const HELMS: [&str; 2] = ["helm3", "helm4"];
/// The oldest and newest Kubernetes whose schemas kubernetes-validate
/// bundles. Chart.yaml's kubeVersion allows 1.23 and 1.24 too, which no
/// bundled schema covers (the chart uses no API that changed since 1.23).
const KUBE_VERSIONS: [&str; 2] = ["1.25.0", "1.37.0"];

/// Writes each YAML document of `values` to a file in `dir` and returns the
/// `-f FILE` arguments, in order (later files win, as with Helm).
fn values_args(values: &[&str], dir: &Path) -> Vec<OsString> {
    let mut args = Vec::new();
    for (i, doc) in values.iter().enumerate() {
        let file = dir.join(format!("values-{i}.yaml"));
        std::fs::write(&file, doc).unwrap();
        args.push("-f".into());
        args.push(file.into_os_string());
    }
    args
}

/// `helm template` of `chart` with `values`: the manifest, or the error.
fn template_of(helm: &str, chart: &Path, values: &[&str], extra: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<OsString> = vec![
        "template".into(),
        RELEASE.into(),
        chart.into(),
        "--namespace".into(),
        NAMESPACE.into(),
    ];
    args.extend(values_args(values, dir.path()));
    args.extend(extra.iter().map(OsString::from));
    tools().run(helm, args)
}

fn chart_dir() -> PathBuf {
    root().join(CHART)
}

/// The YAML documents of a manifest, as JSON values.
fn documents(manifest: &str) -> Vec<Json> {
    serde_saphyr::from_multiple_with_options(manifest, toolscore::config::yaml_options())
        .unwrap_or_else(|e| panic!("{e}\n{manifest}"))
}

/// Renders the chart with values.yaml plus `values`, with Helm 3 and Helm 4,
/// which must agree object for object; panics on a render error.
pub(super) fn render(values: &[&str]) -> Vec<Json> {
    let [helm3, helm4] = HELMS.map(|helm| {
        let out = template_of(helm, &chart_dir(), values, &[]);
        assert!(out.ok, "{helm} template {values:?}: {}", out.stderr);
        documents(&out.stdout)
    });
    assert_eq!(
        helm3, helm4,
        "helm 3 and helm 4 render {values:?} differently"
    );
    helm4
}

/// Renders with both Helms, which must both refuse; returns each one's error.
fn refused(values: &[&str]) -> [String; 2] {
    HELMS.map(|helm| {
        let out = template_of(helm, &chart_dir(), values, &[]);
        assert!(!out.ok, "{helm} accepted {values:?}");
        out.stderr
    })
}

/// values.yaml alone (""), then each `ci/*-values.yaml`: (name, content).
fn value_sets() -> Vec<(String, String)> {
    let mut sets: Vec<(String, String)> = std::fs::read_dir(chart_dir().join("ci"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-values.yaml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    sets.sort();
    sets.insert(0, ("values.yaml".into(), String::new()));
    sets
}

fn find<'a>(docs: &'a [Json], kind: &str, name: &str) -> Option<&'a Json> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn kinds(docs: &[Json]) -> Vec<String> {
    let mut k: Vec<String> = docs
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_owned())
        .collect();
    k.sort();
    k
}

fn workload(docs: &[Json]) -> &Json {
    let w: Vec<&Json> = docs
        .iter()
        .filter(|d| d["kind"] == "Deployment" || d["kind"] == "StatefulSet")
        .collect();
    assert_eq!(w.len(), 1, "one workload");
    w[0]
}

fn container(docs: &[Json]) -> &Json {
    &workload(docs)["spec"]["template"]["spec"]["containers"][0]
}

fn config_of(docs: &[Json]) -> Json {
    let cm = find(docs, "ConfigMap", RELEASE).expect("the config ConfigMap");
    serde_saphyr::from_str_with_options(
        cm["data"]["config.yaml"].as_str().unwrap(),
        toolscore::config::yaml_options(),
    )
    .unwrap()
}

/// Whether a label selector (matchLabels form) selects `labels`.
fn selects(selector: &Json, labels: &Json) -> bool {
    let sel = selector.as_object().unwrap();
    assert!(!sel.is_empty(), "an empty selector selects everything");
    sel.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The objects hang together as the API server and kubelet would need:
/// names, namespaces, selectors, named ports, probes, mounted ConfigMaps.
fn check_objects(docs: &[Json]) {
    let dns_label = regex::Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").unwrap();
    for d in docs {
        let kind = d["kind"].as_str().expect("kind");
        let name = d["metadata"]["name"].as_str().expect("metadata.name");
        assert!(
            dns_label.is_match(name) && name.len() <= 63,
            "{kind} {name}"
        );
        assert_eq!(d["metadata"]["namespace"], NAMESPACE, "{kind} {name}");
        let labels = &d["metadata"]["labels"];
        assert_eq!(
            labels["app.kubernetes.io/instance"], RELEASE,
            "{kind} {name}"
        );
        assert!(
            labels["app.kubernetes.io/component"].is_string(),
            "{kind} {name}: app.kubernetes.io/component"
        );
    }

    let w = workload(docs);
    let pod = &w["spec"]["template"];
    let pod_labels = &pod["metadata"]["labels"];
    assert!(selects(&w["spec"]["selector"]["matchLabels"], pod_labels));
    // Only the workload's pods: a selector that matched the test pod would
    // let the ReplicaSet adopt it and the Services route to it.
    let others: Vec<&Json> = docs.iter().filter(|d| d["kind"] == "Pod").collect();
    let c = &pod["spec"]["containers"][0];
    let port_names: BTreeSet<&str> = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let n = p["name"].as_str().unwrap();
            assert!(n.len() <= 15, "port name {n} longer than 15");
            n
        })
        .collect();
    let mut selectors = vec![&w["spec"]["selector"]["matchLabels"]];
    for d in docs.iter().filter(|d| d["kind"] == "Service") {
        selectors.push(&d["spec"]["selector"]);
        for p in d["spec"]["ports"].as_array().unwrap() {
            let target = p["targetPort"].as_str().unwrap();
            assert!(port_names.contains(target), "Service port {target}");
        }
    }
    for d in docs.iter().filter(|d| d["kind"] == "PodDisruptionBudget") {
        selectors.push(&d["spec"]["selector"]["matchLabels"]);
    }
    for d in docs.iter().filter(|d| d["kind"] == "NetworkPolicy") {
        selectors.push(&d["spec"]["podSelector"]["matchLabels"]);
        for rule in d["spec"]["ingress"].as_array().unwrap() {
            for p in rule["ports"].as_array().unwrap() {
                assert!(port_names.contains(p["port"].as_str().unwrap()));
            }
        }
    }
    for selector in selectors {
        assert!(selects(selector, pod_labels), "{selector} misses the pods");
        for other in &others {
            assert!(
                !selects(selector, &other["metadata"]["labels"]),
                "{selector} selects {}",
                other["metadata"]["name"]
            );
        }
    }
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        let port = &c[probe]["httpGet"]["port"];
        if let Some(port) = port.as_str() {
            assert!(port_names.contains(port), "{probe} on port {port}");
        }
    }
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    for v in volumes {
        if let Some(cm) = v["configMap"]["name"].as_str() {
            assert!(find(docs, "ConfigMap", cm).is_some(), "volume {cm}");
        }
    }
    let claims = workload(docs)["spec"]["volumeClaimTemplates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for m in c["volumeMounts"].as_array().unwrap() {
        let vol = m["name"].as_str().unwrap();
        assert!(
            volumes
                .iter()
                .chain(&claims)
                .any(|v| v["name"] == vol || v["metadata"]["name"] == vol),
            "mount of volume {vol}"
        );
    }
    if let Some(sa) = docs.iter().find(|d| d["kind"] == "ServiceAccount") {
        assert_eq!(pod["spec"]["serviceAccountName"], sa["metadata"]["name"]);
    }
    if find(docs, "ConfigMap", RELEASE).is_some() {
        check_storage(docs);
        check_secret_files(docs);
    }
}

/// The listeners' (`api.*`, `receivers.*`) `tls:` blocks of a rendered config.
fn tls_blocks(config: &Json) -> Vec<(String, &Json)> {
    ["receivers.grpc", "receivers.http", "api.http", "api.grpc"]
        .iter()
        .filter_map(|l| {
            let (a, b) = l.split_once('.').unwrap();
            let tls = &config[a][b]["tls"];
            tls.is_object().then(|| ((*l).to_owned(), tls))
        })
        .collect()
}

/// Every file the rendered config names for TLS (`cert_file`, `key_file`,
/// `client_ca_file`) and for tokens (`auth.tokens[].file`) is in a Secret
/// mounted read-only as a whole directory (a subPath never sees the Secret
/// change, and toolscore re-reads these files), under the key the file is
/// named after.
fn check_secret_files(docs: &[Json]) {
    let config = config_of(docs);
    let pod = &workload(docs)["spec"]["template"]["spec"];
    let mounts = container(docs)["volumeMounts"].as_array().unwrap();
    let volumes = pod["volumes"].as_array().unwrap();
    let mut files: Vec<(String, String)> = Vec::new();
    for (listener, tls) in tls_blocks(&config) {
        for key in ["cert_file", "key_file", "client_ca_file"] {
            if let Some(file) = tls[key].as_str() {
                files.push((format!("{listener}.tls.{key}"), file.to_owned()));
            }
        }
    }
    for (i, token) in config["auth"]["tokens"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(file) = token["file"].as_str() {
            files.push((format!("auth.tokens[{i}].file"), file.to_owned()));
        }
    }
    for (key, file) in files {
        let (dir, _) = file.rsplit_once('/').unwrap();
        let mount = mounts
            .iter()
            .find(|m| m["mountPath"] == dir)
            .unwrap_or_else(|| panic!("{key}: nothing mounted at {dir}"));
        assert_eq!(mount["readOnly"], true, "{key}");
        assert!(mount.get("subPath").is_none(), "{key}: a subPath");
        let volume = volumes
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap_or_else(|| panic!("{key}: no volume {}", mount["name"]));
        assert!(
            volume["secret"]["secretName"].is_string(),
            "{key}: {volume}"
        );
    }
}

/// The results store the rendered config names is where the pod has it: the
/// SQLite file in the mounted data volume (a claim only in a StatefulSet),
/// the write-ahead log there too, no data volume for the other backends
/// without the log, several replicas only on
/// PostgreSQL, and the password file in the mounted Secret's item.
fn check_storage(docs: &[Json]) {
    let config = config_of(docs);
    let w = workload(docs);
    let pod = &w["spec"]["template"]["spec"];
    let mounts = container(docs)["volumeMounts"].as_array().unwrap();
    let volumes = pod["volumes"].as_array().unwrap();
    let claims = w["spec"]["volumeClaimTemplates"].as_array();
    let data_mount = mounts.iter().find(|m| m["name"] == "data");
    let backend = config["store"]["backend"].as_str().unwrap();
    if backend == "sqlite" {
        let path = config["store"]["sqlite"]["path"].as_str().unwrap();
        let mount = data_mount.expect("SQLite without the data volume");
        assert!(path.starts_with(&format!("{}/", mount["mountPath"].as_str().unwrap())));
        assert_eq!(w["spec"]["replicas"], 1, "several replicas on SQLite");
        let claimed = claims.is_some_and(|c| c.iter().any(|c| c["metadata"]["name"] == "data"));
        assert_eq!(
            claimed,
            w["kind"] == "StatefulSet",
            "a claim iff a StatefulSet"
        );
    } else {
        assert!(claims.is_none(), "{backend}: volumeClaimTemplates");
        assert_eq!(w["kind"], "Deployment", "{backend}");
    }
    // The write-ahead log (on unless the config turns it off) is in the data
    // volume, with every backend; without it, only SQLite has the volume.
    if config["wal"]["enabled"] != false {
        let dir = config["wal"]["dir"].as_str().expect("wal.dir");
        let mount = data_mount.expect("the write-ahead log without the data volume");
        assert!(dir.starts_with(&format!("{}/", mount["mountPath"].as_str().unwrap())));
        assert!(volumes.iter().any(|v| v["name"] == "data") || claims.is_some());
    } else if backend != "sqlite" {
        assert!(data_mount.is_none(), "{backend}: a data volume is mounted");
        assert!(volumes.iter().all(|v| v["name"] != "data"), "{backend}");
    }
    if backend != "postgres" {
        assert!(w["spec"]["replicas"] == 1, "several replicas on {backend}");
    }
    match config["store"]["postgres"]["password_file"].as_str() {
        Some(file) => {
            let (dir, name) = file.rsplit_once('/').unwrap();
            let mount = mounts
                .iter()
                .find(|m| m["mountPath"] == dir)
                .unwrap_or_else(|| panic!("nothing mounted at {dir}"));
            assert_eq!(mount["readOnly"], true);
            let volume = volumes.iter().find(|v| v["name"] == mount["name"]).unwrap();
            let items = volume["secret"]["items"].as_array().unwrap();
            assert!(items.iter().any(|i| i["path"] == name), "{volume}");
            assert!(volume["secret"]["secretName"].is_string());
        }
        None => assert!(volumes.iter().all(|v| v["name"] != "postgres-password")),
    }
}

/// Writes the rendered config and the mounted files as the pod sees them
/// (config.yaml, evaluators/, eval-sets/), and returns the config's path.
fn write_pod_files(docs: &[Json], dir: &Path) -> PathBuf {
    write_pod_files_with(docs, dir, &BTreeMap::new())
}

/// Secrets' content (name → key → content) for [`write_pod_files_with`].
pub(super) type Secrets = BTreeMap<&'static str, BTreeMap<&'static str, String>>;

/// The Secrets the value sets name, with content toolscore can load: a
/// certificate for the Service's name (its own CA), a token per key.
pub(super) fn secret_fixtures() -> Secrets {
    let cert =
        rcgen::generate_simple_self_signed(vec![format!("{RELEASE}.{NAMESPACE}.svc")]).unwrap();
    let tls = BTreeMap::from([
        ("tls.crt", cert.cert.pem()),
        ("tls.key", cert.signing_key.serialize_pem()),
        ("ca.crt", cert.cert.pem()),
    ]);
    let tokens = BTreeMap::from([
        (
            "ingest",
            "# the Collector\ningest-token-1\n\ningest-token-2\n".to_owned(),
        ),
        ("read", "read-token\n".to_owned()),
        ("evaluate", "evaluate-token\n".to_owned()),
        ("metrics", "metrics-token\n".to_owned()),
    ]);
    BTreeMap::from([
        ("toolscore-tls", tls),
        ("toolscore-tokens", tokens),
        (
            "toolscore-postgres",
            BTreeMap::from([("password", "pw".to_owned())]),
        ),
    ])
}

/// [`write_pod_files`], plus the Secret volumes `secrets` has content for,
/// each mounted where the pod mounts it (its `items`, else every key); the
/// config's absolute paths under the config's folder (/etc/toolscore/…)
/// then name the files written here, so toolscore reads those.
fn write_pod_files_with(docs: &[Json], dir: &Path, secrets: &Secrets) -> PathBuf {
    let pod = &workload(docs)["spec"]["template"]["spec"];
    let c = container(docs);
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[..2], ["serve", "--config"]);
    let config_path = Path::new(args[2]);
    let base = config_path.parent().unwrap();
    for mount in c["volumeMounts"].as_array().unwrap() {
        // The data volume may be a claim (volumeClaimTemplates).
        let Some(volume) = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
        else {
            continue;
        };
        let mount_path = Path::new(mount["mountPath"].as_str().unwrap());
        let Ok(rel) = mount_path.strip_prefix(base) else {
            continue;
        };
        if let Some(content) = volume["secret"]["secretName"]
            .as_str()
            .and_then(|name| secrets.get(name))
        {
            assert!(mount.get("subPath").is_none(), "{mount}");
            std::fs::create_dir_all(dir.join(rel)).unwrap();
            let items: Vec<(String, String)> = match volume["secret"]["items"].as_array() {
                Some(items) => items
                    .iter()
                    .map(|i| {
                        (
                            i["key"].as_str().unwrap().to_owned(),
                            i["path"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
                None => content
                    .keys()
                    .map(|k| ((*k).to_owned(), (*k).to_owned()))
                    .collect(),
            };
            for (key, path) in items {
                std::fs::write(dir.join(rel).join(path), &content[key.as_str()]).unwrap();
            }
            continue;
        }
        let Some(cm) = volume["configMap"]["name"].as_str() else {
            continue;
        };
        let cm = find(docs, "ConfigMap", cm).unwrap();
        match mount["subPath"].as_str() {
            Some(key) => {
                let content = cm["data"][key].as_str().unwrap();
                std::fs::write(dir.join(rel), content).unwrap();
            }
            None => {
                std::fs::create_dir_all(dir.join(rel)).unwrap();
                for (key, content) in cm["data"].as_object().unwrap() {
                    std::fs::write(dir.join(rel).join(key), content.as_str().unwrap()).unwrap();
                }
            }
        }
    }
    let config_file = dir.join(config_path.strip_prefix(base).unwrap());
    if !secrets.is_empty() {
        let text = std::fs::read_to_string(&config_file).unwrap();
        let here = format!("{}/", dir.display());
        std::fs::write(
            &config_file,
            text.replace(&format!("{}/", base.display()), &here),
        )
        .unwrap();
    }
    config_file
}

/// Writes `docs` as one YAML manifest, as `helm template` prints it.
fn write_manifest(docs: &[Json], file: &Path) {
    let text: String = docs
        .iter()
        .map(|d| format!("---\n{}", serde_saphyr::to_string(d).unwrap()))
        .collect();
    std::fs::write(file, text).unwrap();
}

/// `kubernetes-validate --strict` of the manifests against the schemas of
/// each of [`KUBE_VERSIONS`]: unknown fields and wrong types are refused.
fn assert_kubernetes_valid(files: &[PathBuf]) {
    for version in KUBE_VERSIONS {
        let mut args: Vec<OsString> = vec!["--strict".into(), "-k".into(), version.into()];
        args.extend(files.iter().map(|f| f.clone().into_os_string()));
        let out = tools().run("kubernetes-validate", args);
        assert!(out.ok, "Kubernetes {version} schemas: {}", out.text());
    }
}

fn checksum(docs: &[Json]) -> String {
    workload(docs)["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        .as_str()
        .expect("checksum/config annotation")
        .to_owned()
}

/// The NOTES `helm install` prints (Helm 4 renders them with
/// `--dry-run=client`, no cluster; Helm 3.17 needs one for it).
fn notes(values: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<OsString> = vec![
        "install".into(),
        RELEASE.into(),
        chart_dir().into(),
        "--namespace".into(),
        NAMESPACE.into(),
        "--dry-run=client".into(),
    ];
    args.extend(values_args(values, dir.path()));
    let out = tools().run("helm4", args);
    assert!(out.ok, "helm4 install --dry-run=client: {}", out.text());
    let (_, notes) = out
        .stdout
        .split_once("\nNOTES:\n")
        .unwrap_or_else(|| panic!("no NOTES in {}", out.stdout));
    notes.to_owned()
}

#[test]
fn the_real_helms_are_the_pinned_majors() {
    for (helm, major) in [("helm3", "v3."), ("helm4", "v4.")] {
        let out = tools().run(helm, ["version", "--short"]);
        assert!(out.ok && out.stdout.starts_with(major), "{}", out.text());
    }
}

#[test]
fn helm_lint_strict_passes_the_defaults_and_every_ci_values_file() {
    for helm in HELMS {
        for (name, values) in value_sets() {
            let dir = tempfile::tempdir().unwrap();
            let mut args: Vec<OsString> =
                vec!["lint".into(), "--strict".into(), chart_dir().into()];
            args.extend(values_args(&[&values], dir.path()));
            let out = tools().run(helm, args);
            assert!(out.ok, "{helm} lint --strict [{name}]: {}", out.text());
            for level in ["[WARNING]", "[ERROR]", "[INFO]"] {
                assert!(
                    !out.stdout.contains(level),
                    "{helm} [{name}]: {}",
                    out.stdout
                );
            }
        }
    }
}

/// Every value set: Helm 3 and 4 agree; the objects hang together and pass
/// the Kubernetes schemas (oldest and newest bundled version, strict) and,
/// for ServiceMonitors, the prometheus-operator CRD schema; the config the
/// pod would run passes `toolscore validate-config` and binds what the pod
/// exposes.
#[test]
fn every_value_set_renders_into_valid_objects_and_a_valid_config() {
    let rendered = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut monitors: Vec<Json> = Vec::new();
    for (name, values) in value_sets() {
        let docs = render(&[&values]);
        check_objects(&docs);
        monitors.extend(
            docs.iter()
                .filter(|d| d["kind"] == "ServiceMonitor")
                .cloned(),
        );
        let file = rendered.path().join(&name);
        write_manifest(&docs, &file);
        files.push(file);

        // The Secrets' files too: with TLS or tokens toolscore reads them
        // (validate-config loads the certificates and tokens).
        let pod = tempfile::tempdir().unwrap();
        let config_file = write_pod_files_with(&docs, pod.path(), &secret_fixtures());
        validate_config(&config_file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let config = Config::load(&config_file).unwrap();
        let exposed: BTreeSet<u16> = container(&docs)["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| u16::try_from(p["containerPort"].as_u64().unwrap()).unwrap())
            .collect();
        assert_eq!(bound_ports(&config), exposed, "{name}");
        for addr in [config.receivers.grpc.endpoint, config.api.http.endpoint] {
            assert!(addr.ip().is_unspecified(), "{name}: {addr}");
        }
    }
    assert_kubernetes_valid(&files);
    assert!(!monitors.is_empty(), "a value set renders a ServiceMonitor");
    let out = tools().validate_servicemonitors(&Json::Array(monitors).to_string());
    assert!(out.ok, "{}", out.text());
}

/// The schema checks can fail: an unknown field in an object the chart
/// passes through is refused by the Kubernetes schema, and a bad interval by
/// the CRD's.
#[test]
fn the_kubernetes_and_crd_schemas_refuse_what_the_api_server_would() {
    let docs = render(&["extraVolumes: [{name: x, emptyDir: {}, bogusField: 1}]"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    let w = workload(&docs);
    std::fs::write(&file, serde_saphyr::to_string(w).unwrap()).unwrap();
    let out = tools().run(
        "kubernetes-validate",
        [
            "--strict".as_ref(),
            "-k".as_ref(),
            "1.37.0".as_ref(),
            file.as_os_str(),
        ],
    );
    assert!(
        !out.ok && out.text().contains("bogusField"),
        "{}",
        out.text()
    );

    let mut monitor = render(&["serviceMonitor: {enabled: true}"])
        .into_iter()
        .find(|d| d["kind"] == "ServiceMonitor")
        .unwrap();
    monitor["spec"]["endpoints"][0]["interval"] = json!("30");
    let out = tools().validate_servicemonitors(&json!([monitor]).to_string());
    assert!(!out.ok && out.text().contains("interval"), "{}", out.text());
}

#[test]
fn schema_violating_values_are_refused_by_both_helms() {
    // (values, the key path Helm names, a name the message must contain)
    let bad = [
        ("unknownKey: 1", "", "unknownKey"),
        ("image: {tagg: v1}", "image", "tagg"),
        ("image: {tag: latest}", "image.tag", ""),
        ("image: {repository: ''}", "image.repository", ""),
        ("image: {digest: 'sha256:abc'}", "image.digest", ""),
        ("image: {pullPolicy: Sometimes}", "image.pullPolicy", ""),
        ("ports: {http: 70000}", "ports.http", ""),
        ("ports: {metrics: 9090}", "ports", "metrics"),
        ("replicaCount: 0", "replicaCount", ""),
        // Helm drops a key set to null: every key is required.
        ("resources: null", "", "resources"),
        ("resources: {requests: null, limits: null}", "resources", ""),
        ("service: {type: ExternalName}", "service.type", ""),
        (
            "serviceMonitor: {enabled: 'yes'}",
            "serviceMonitor.enabled",
            "",
        ),
        (
            "serviceMonitor: {interval: 30}",
            "serviceMonitor.interval",
            "",
        ),
        (
            "serviceMonitor: {interval: '1m30x'}",
            "serviceMonitor.interval",
            "",
        ),
        (
            "serviceMonitor: {intervall: 30s}",
            "serviceMonitor",
            "intervall",
        ),
        (
            "livenessProbe: {httpGett: {path: /}}",
            "livenessProbe",
            "httpGett",
        ),
        (
            "startupProbe: {periodSeconds: 0}",
            "startupProbe.periodSeconds",
            "",
        ),
        ("evalSets: {weather.txt: '{}'}", "evalSets", "weather.txt"),
        (
            "podDisruptionBudget: {maxUnavailable: many}",
            "podDisruptionBudget.maxUnavailable",
            "",
        ),
        (
            "updateStrategy: {type: Sometimes}",
            "updateStrategy.type",
            "",
        ),
        (
            "networkPolicy: {enabled: 'yes'}",
            "networkPolicy.enabled",
            "",
        ),
        (
            "extraVolumeMounts: [{name: x}]",
            "extraVolumeMounts.0",
            "mountPath",
        ),
        ("tests: {enabled: 1}", "tests.enabled", ""),
        (
            "postgres: {existingSecrett: pg}",
            "postgres",
            "existingSecrett",
        ),
        (
            "postgres: {existingSecret: Not_A_Name}",
            "postgres.existingSecret",
            "",
        ),
        ("postgres: {passwordKey: ''}", "postgres.passwordKey", ""),
        ("global: 1", "global", ""),
        ("tls: {minVersion: '1.1'}", "tls.minVersion", ""),
        (
            "tls: {existingSecret: Not_A_Name}",
            "tls.existingSecret",
            "",
        ),
        ("tls: {listeners: {otlp: true}}", "tls.listeners", "otlp"),
        ("tls: {clientAuth: 'yes'}", "tls.clientAuth", ""),
        (
            "auth: {tokenKeys: {admin: admin}}",
            "auth.tokenKeys",
            "admin",
        ),
        (
            "auth: {tokenKeys: {read: 'a/b'}}",
            "auth.tokenKeys.read",
            "",
        ),
        ("auth: {publicMetrics: 'no'}", "auth.publicMetrics", ""),
        ("auth: {enabled: true}", "auth", "enabled"),
        (
            "serviceMonitor: {tlsConfig: []}",
            "serviceMonitor.tlsConfig",
            "",
        ),
        ("config: []", "config", ""),
    ];
    for (values, path, names) in bad {
        let [helm3, helm4] = refused(&[values]);
        for (helm, err, at) in [
            (
                "helm3",
                &helm3,
                format!("- {}:", if path.is_empty() { "(root)" } else { path }),
            ),
            (
                "helm4",
                &helm4,
                if path.is_empty() {
                    "at ''".to_owned()
                } else {
                    format!("at '/{}'", path.replace('.', "/"))
                },
            ),
        ] {
            // Helm 4.3.1 names the wrong key for a propertyNames failure
            // ("at '/serviceMonitor': invalid propertyName 'weather.txt'"):
            // there the offending name is enough.
            let located = err.contains(&at) || (helm == "helm4" && err.contains("propertyName"));
            assert!(
                err.contains("don't meet the specifications of the schema")
                    && located
                    && err.contains(names),
                "{helm} on {values:?}: expected {at:?} naming {names:?}, got {err}"
            );
        }
    }
}

#[test]
fn the_chart_refuses_a_grace_period_within_the_drain_deadline() {
    for values in [
        "terminationGracePeriodSeconds: 20",
        "config: {shutdown_timeout_ms: 45000}",
    ] {
        for err in refused(&[values]) {
            assert!(
                err.contains("terminationGracePeriodSeconds (")
                    && err.contains("the pod would be killed while it drains"),
                "{values}: {err}"
            );
        }
    }
    let docs = render(&["config: {shutdown_timeout_ms: 29999}"]);
    assert_eq!(config_of(&docs)["shutdown_timeout_ms"], 29999);
}

/// The chart's memory estimate against `resources.limits.memory`: the
/// defaults fit the default 1Gi; bounds that cannot fit are refused, naming
/// the need; every quantity form Kubernetes users write is read.
#[test]
fn the_chart_refuses_memory_bounds_that_cannot_fit_the_limit() {
    // The defaults: 80 + 64 + 64 + 1.5 x 256 + 1.5 x 64 + (1024 + 512) x 16 KiB = 712 MiB.
    let docs = render(&[]);
    assert_eq!(container(&docs)["resources"]["limits"]["memory"], "1Gi");
    let config = config_of(&docs);
    assert_eq!(config["assembler"]["max_buffered_bytes"], 256 << 20);
    assert_eq!(config["store"]["max_bytes"], 64 << 20);
    assert_eq!(config["store"]["backend"], "sqlite");
    assert_eq!(
        config["store"]["sqlite"]["path"],
        "/var/lib/toolscore/results.db"
    );

    for (values, need) in [
        ("resources: {limits: {memory: 512Mi}}", 712),
        ("resources: {limits: {memory: 711Mi}}", 712),
        // toolscore's own defaults: 512 MiB of spans.
        ("config: {assembler: {max_buffered_bytes: null}}", 1096),
        ("config: {store: {max_bytes: 536870912}}", 1384),
        ("config: {store: {writer: {queue_capacity: 65536}}}", 1720),
        ("config: {store: {writer: {max_batch: 65536}}}", 1728),
        (
            "config: {receivers: {grpc: {max_recv_msg_size_bytes: 536870912}}}",
            1160,
        ),
    ] {
        for err in refused(&[values]) {
            assert!(
                err.contains(&format!(
                    "below the {need} MiB that config's memory bounds need"
                )),
                "{values}: {err}"
            );
        }
    }
    for memory in [
        "712Mi",
        "1G",
        "0.9Gi",
        "1e9",
        "1000000000",
        "932000k",
        "2Ti",
    ] {
        render(&[&format!("resources: {{limits: {{memory: {memory}}}}}")]);
    }
    for memory in ["lots", "1GiB", "-1Gi"] {
        for err in refused(&[&format!("resources: {{limits: {{memory: '{memory}'}}}}")]) {
            assert!(err.contains("is not a memory quantity"), "{memory}: {err}");
        }
    }
    // No limit: nothing to check against. An existing ConfigMap: the chart
    // cannot see the bounds.
    render(&["resources: {limits: {memory: null}}\nconfig: {store: {max_bytes: 4294967296}}"]);
    render(&["existingConfigMap: mine\nconfig: {store: {max_bytes: 4294967296}}"]);
}

#[test]
fn kube_versions_below_the_charts_are_refused() {
    for helm in HELMS {
        let out = template_of(helm, &chart_dir(), &[], &["--kube-version", "1.22.0"]);
        assert!(
            !out.ok && out.stderr.contains("kubeVersion"),
            "{helm}: {}",
            out.text()
        );
        let out = template_of(helm, &chart_dir(), &[], &["--kube-version", "1.23.0"]);
        assert!(out.ok, "{helm}: {}", out.text());
    }
}

/// Helm passes every subchart a `global:` map; an umbrella chart's values
/// reach the chart under its name.
#[test]
fn the_chart_works_as_a_subchart_of_an_umbrella_chart() {
    let umbrella = tempfile::tempdir().unwrap();
    copy_dir(
        &root().join("tests/deploy/umbrella"),
        umbrella.path(),
        &|_| true,
    );
    copy_dir(
        &chart_dir(),
        &umbrella.path().join("charts/toolscore"),
        &|_| true,
    );
    for helm in HELMS {
        let out = tools().run(
            helm,
            [
                "lint".as_ref(),
                "--strict".as_ref(),
                umbrella.path().as_os_str(),
            ],
        );
        assert!(out.ok, "{helm} lint: {}", out.text());
        let out = template_of(helm, umbrella.path(), &[], &[]);
        assert!(out.ok, "{helm} template: {}", out.text());
        let docs = documents(&out.stdout);
        let deployment = docs
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .expect("the umbrella's PostgreSQL config reached the chart");
        assert_eq!(deployment["metadata"]["name"], RELEASE);
        assert_eq!(deployment["spec"]["replicas"], 2);
        let volumes = deployment["spec"]["template"]["spec"]["volumes"].to_string();
        assert!(volumes.contains("stack-postgres"), "{volumes}");
    }
}

#[test]
fn the_default_render_is_one_stateful_pod_probed_on_the_api_port() {
    let docs = render(&[]);
    assert_eq!(
        kinds(&docs),
        [
            "ConfigMap",
            "Pod",
            "Service",
            "Service",
            "ServiceAccount",
            "StatefulSet"
        ]
    );
    let w = find(&docs, "StatefulSet", RELEASE).unwrap();
    assert_eq!(w["spec"]["replicas"], 1);
    assert_eq!(w["spec"]["revisionHistoryLimit"], 10);
    assert!(
        w["spec"].get("updateStrategy").is_none(),
        "the Kubernetes default"
    );
    assert_eq!(w["spec"]["serviceName"], format!("{RELEASE}-headless"));
    // The results database on a claim of its own, mounted where the config
    // puts it.
    let claim = &w["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["metadata"]["name"], "data");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "3Gi");
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    let mounts = &w["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
    assert!(
        mounts
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "data" && m["mountPath"] == "/var/lib/toolscore"),
        "{mounts}"
    );
    assert_eq!(
        config_of(&docs)["store"]["sqlite"]["path"],
        "/var/lib/toolscore/results.db"
    );
    // Without persistence: a Deployment, the data in an emptyDir.
    let docs = render(&["persistence: {enabled: false}"]);
    let d = find(&docs, "Deployment", RELEASE).unwrap();
    let volumes = &d["spec"]["template"]["spec"]["volumes"];
    assert!(
        volumes
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "data" && v["emptyDir"]["sizeLimit"] == "3Gi"),
        "{volumes}"
    );
    let pod = &w["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(
        c["image"],
        format!("toolscore:{}", env!("CARGO_PKG_VERSION"))
    );
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": path, "port": "http"}),
            "{probe}"
        );
    }
    // Up to a minute to start before liveness checks begin.
    let startup = &c["startupProbe"];
    assert!(
        startup["periodSeconds"].as_u64().unwrap() * startup["failureThreshold"].as_u64().unwrap()
            >= 60
    );
    for key in ["requests", "limits"] {
        let r = c["resources"][key].as_object().unwrap();
        assert!(
            r.contains_key("cpu") && r.contains_key("memory"),
            "resources.{key}"
        );
    }
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["automountServiceAccountToken"], false);
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(grace * 1000 > 20_000);

    // Services: every port on the ClusterIP one; OTLP on the headless one.
    let svc = find(&docs, "Service", RELEASE).unwrap();
    let ports: BTreeMap<&str, u64> = svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["port"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        ports,
        BTreeMap::from([
            ("grpc", 8081),
            ("http", 8080),
            ("otlp-grpc", 4317),
            ("otlp-http", 4318)
        ])
    );
    let headless = find(&docs, "Service", &format!("{RELEASE}-headless")).unwrap();
    assert_eq!(headless["spec"]["clusterIP"], "None");
    assert!(
        headless["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == 4317 && p["targetPort"] == "otlp-grpc")
    );
}

/// The pods' labels carry no chart version: a chart upgrade alone does not
/// roll them. Every object has a component; the headless Service its own.
#[test]
fn labels_have_components_and_a_chart_bump_does_not_roll_the_pods() {
    let docs = render(&[]);
    let template = &workload(&docs)["spec"]["template"];
    assert!(
        template["metadata"]["labels"]
            .get("helm.sh/chart")
            .is_none()
    );
    assert_eq!(
        template["metadata"]["labels"]["app.kubernetes.io/component"],
        "scorer"
    );
    let svc = find(&docs, "Service", RELEASE).unwrap();
    let headless = find(&docs, "Service", &format!("{RELEASE}-headless")).unwrap();
    assert_eq!(
        svc["metadata"]["labels"]["app.kubernetes.io/component"],
        "scorer"
    );
    assert_eq!(
        headless["metadata"]["labels"]["app.kubernetes.io/component"],
        "otlp-routing"
    );

    let bumped = tempfile::tempdir().unwrap();
    copy_dir(&chart_dir(), bumped.path(), &|_| true);
    let chart_yaml = bumped.path().join("Chart.yaml");
    let text = std::fs::read_to_string(&chart_yaml).unwrap();
    assert!(text.contains("\nversion: 0.1.0\n"));
    std::fs::write(
        &chart_yaml,
        text.replace("\nversion: 0.1.0\n", "\nversion: 0.1.1\n"),
    )
    .unwrap();
    let out = template_of("helm4", bumped.path(), &[], &[]);
    assert!(out.ok, "{}", out.stderr);
    let after = documents(&out.stdout);
    assert_eq!(
        workload(&after)["spec"]["template"],
        *template,
        "the pod template changed with the chart version"
    );
    assert_ne!(
        find(&after, "Service", RELEASE).unwrap(),
        svc,
        "the objects' labels do change"
    );
}

/// The values several replicas need: PostgreSQL with its URL.
const ON_POSTGRES: &str = "config: {store: {backend: postgres, postgres: {url: 'postgres://toolscore@db:5432/toolscore'}}}";

/// Several replicas share one PostgreSQL: a Deployment (no claims, no data
/// volume), its pods listed by the headless Service for the Collector's
/// loadbalancing exporter, a PodDisruptionBudget, the password Secret
/// mounted (ci/multi-replica-values.yaml).
#[test]
fn several_replicas_on_postgres_render_a_deployment_behind_the_headless_service_with_a_pdb() {
    let docs = render(&[&read(&format!("{CHART}/ci/multi-replica-values.yaml"))]);
    check_objects(&docs);
    assert!(docs.iter().all(|d| d["kind"] != "StatefulSet"));
    let deployment = find(&docs, "Deployment", RELEASE).unwrap();
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert!(deployment["spec"].get("volumeClaimTemplates").is_none());
    assert!(deployment["spec"].get("serviceName").is_none());
    let pod = &deployment["spec"]["template"];
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    // Each pod's write-ahead log in its own emptyDir, nothing shared.
    let data: Vec<_> = volumes.iter().filter(|v| v["name"] == "data").collect();
    assert!(
        data.len() == 1 && data[0]["emptyDir"].is_object(),
        "{volumes:?}"
    );
    let mounts = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap();
    assert!(
        mounts
            .iter()
            .filter(|m| m["mountPath"] == "/var/lib/toolscore")
            .all(|m| m["name"] == "data"),
        "{mounts:?}"
    );
    let secret = volumes
        .iter()
        .find(|v| v["secret"]["secretName"] == "toolscore-postgres")
        .expect("the password Secret's volume");
    assert_eq!(secret["secret"]["items"][0]["key"], "password");

    // The headless Service lists the Deployment's pods, on the OTLP port the
    // loadbalancing exporter sends to.
    let headless = find(&docs, "Service", &format!("{RELEASE}-headless")).unwrap();
    assert_eq!(headless["spec"]["clusterIP"], "None");
    assert_eq!(headless["spec"]["publishNotReadyAddresses"], false);
    assert!(selects(
        &headless["spec"]["selector"],
        &pod["metadata"]["labels"]
    ));
    assert!(
        headless["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == 4317 && p["targetPort"] == "otlp-grpc")
    );
    let pdb = find(&docs, "PodDisruptionBudget", RELEASE).unwrap();
    assert!(selects(
        &pdb["spec"]["selector"]["matchLabels"],
        &pod["metadata"]["labels"]
    ));
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert!(pdb["spec"].get("minAvailable").is_none());
    // The override of shutdown_timeout_ms reached the config, with a grace period above it.
    let config = config_of(&docs);
    assert_eq!(config["store"]["backend"], "postgres");
    assert_eq!(
        config["store"]["postgres"]["url"],
        "postgres://toolscore@postgres.db.svc.cluster.local:5432/toolscore"
    );
    assert_eq!(
        config["store"]["postgres"]["password_file"],
        "/etc/toolscore/postgres/password"
    );
    assert!(config["store"].get("sqlite").is_none(), "no SQLite file");
    assert_eq!(config["shutdown_timeout_ms"], 25_000);
    assert_eq!(config["assembler"]["grace_after_root_ms"], 2000);
    assert_eq!(
        config["assembler"]["on_timeout"], "evaluate",
        "merged, not replaced"
    );
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 40);

    let docs = render(&[
        ON_POSTGRES,
        "replicaCount: 2\npodDisruptionBudget: {enabled: true, minAvailable: 1}",
    ]);
    check_objects(&docs);
    assert_eq!(
        find(&docs, "Deployment", RELEASE).unwrap()["spec"]["replicas"],
        2
    );
    let pdb = find(&docs, "PodDisruptionBudget", RELEASE).unwrap();
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(pdb["spec"].get("maxUnavailable").is_none());
}

/// Several replicas on anything but PostgreSQL would each keep their own
/// results: both Helms refuse, naming both keys and why.
#[test]
fn several_replicas_without_postgres_are_refused_by_both_helms() {
    for (values, backend) in [
        ("replicaCount: 3", "sqlite"),
        ("replicaCount: 3\npersistence: {enabled: false}", "sqlite"),
        (
            "replicaCount: 2\nconfig: {store: {backend: memory}}",
            "memory",
        ),
        // An existing ConfigMap: `config.store.backend` still says which.
        ("replicaCount: 2\nexistingConfigMap: mine", "sqlite"),
    ] {
        for err in refused(&[values]) {
            assert!(
                err.contains("replicaCount: ")
                    && err.contains("need config.store.backend: postgres")
                    && err.contains(&format!("(it is {backend})"))
                    && err.contains("would answer 404"),
                "{values}: {err}"
            );
        }
    }
    // The same with PostgreSQL renders.
    let docs = render(&["replicaCount: 3", ON_POSTGRES]);
    assert_eq!(workload(&docs)["spec"]["replicas"], 3);
    let docs =
        render(&["replicaCount: 2\nexistingConfigMap: mine\nconfig: {store: {backend: postgres}}"]);
    assert_eq!(workload(&docs)["kind"], "Deployment");
}

/// PostgreSQL needs its URL (unless an existing ConfigMap carries it), and
/// one toolscore can reach: no TLS yet. An unknown backend is refused.
#[test]
fn postgres_without_a_url_or_with_tls_is_refused() {
    for values in [
        "config: {store: {backend: postgres}}",
        "config: {store: {backend: postgres, postgres: {url: ''}}}",
        "config: {store: {backend: postgres, postgres: {url: null}}}\npostgres: {existingSecret: pg}",
    ] {
        for err in refused(&[values]) {
            assert!(
                err.contains(
                    "config.store.postgres.url is required with config.store.backend: postgres"
                ),
                "{values}: {err}"
            );
        }
    }
    for err in refused(&["config: {store: {backend: mysql}}"]) {
        assert!(
            err.contains("config.store.backend: \"mysql\" is not a backend"),
            "{err}"
        );
    }
    render(&[ON_POSTGRES]);
    // Any sslmode: toolscore speaks TLS to PostgreSQL with `require`.
    for url in [
        "postgres://t@db/t?sslmode=disable",
        "postgres://t@db/t?sslmode=require",
        "host=db user=t sslmode=verify-full",
    ] {
        render(&[&format!(
            "config: {{store: {{backend: postgres, postgres: {{url: '{url}'}}}}}}"
        )]);
    }
    render(&["existingConfigMap: mine\nconfig: {store: {backend: postgres}}"]);
}

/// With `postgres.existingSecret`, the Secret's key is mounted read-only as
/// a file, the rendered config's `store.postgres.password_file` names that
/// file, and the password itself goes nowhere else; PostgreSQL needs no
/// data volume, so one replica is a Deployment without a claim.
#[test]
fn postgres_with_an_existing_secret_mounts_the_password_file_and_only_the_log_volume() {
    let secret = "postgres: {existingSecret: pg-credentials, passwordKey: pg-password}";
    let docs = render(&[ON_POSTGRES, secret]);
    check_objects(&docs);
    assert_eq!(
        kinds(&docs),
        [
            "ConfigMap",
            "Deployment",
            "Pod",
            "Service",
            "Service",
            "ServiceAccount"
        ],
        "no PersistentVolumeClaim, no StatefulSet"
    );
    let w = workload(&docs);
    assert!(w["spec"].get("volumeClaimTemplates").is_none());
    let pod = &w["spec"]["template"]["spec"];
    let volumes = pod["volumes"].as_array().unwrap();
    // The data volume is the write-ahead log's emptyDir only.
    let data: Vec<_> = volumes.iter().filter(|v| v["name"] == "data").collect();
    assert!(
        data.len() == 1 && data[0]["emptyDir"].is_object(),
        "{volumes:?}"
    );
    let volume = volumes
        .iter()
        .find(|v| v["secret"].is_object())
        .expect("a Secret volume");
    assert_eq!(
        volume["secret"],
        json!({
            "secretName": "pg-credentials",
            "items": [{"key": "pg-password", "path": "password"}],
            "defaultMode": 0o440,
        })
    );
    let mounts = container(&docs)["volumeMounts"].as_array().unwrap();
    assert!(
        mounts
            .iter()
            .filter(|m| m["name"] == "data")
            .all(|m| m["mountPath"] == "/var/lib/toolscore"),
        "{mounts:?}"
    );
    let mount = mounts
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the Secret volume is mounted");
    assert_eq!(mount["readOnly"], true);
    assert!(
        mount.get("subPath").is_none(),
        "a subPath never sees the Secret change"
    );
    let config = config_of(&docs);
    let file = format!("{}/password", mount["mountPath"].as_str().unwrap());
    assert_eq!(file, "/etc/toolscore/postgres/password");
    assert_eq!(config["store"]["postgres"]["password_file"], file.as_str());
    assert_eq!(config["store"]["backend"], "postgres");
    assert!(config["store"].get("sqlite").is_none());
    // toolscore takes the rendered config (it does not read the file until
    // it connects).
    let dir = tempfile::tempdir().unwrap();
    validate_config(&write_pod_files(&docs, dir.path())).unwrap();
    // The Secret's name and key reach the pod only; the ConfigMap has the
    // file's path.
    let cm = serde_json::to_string(find(&docs, "ConfigMap", RELEASE).unwrap()).unwrap();
    assert!(
        !cm.contains("pg-credentials") && !cm.contains("pg-password"),
        "{cm}"
    );

    // The chart owns the path: a password_file in `config` is replaced.
    let docs = render(&[
        ON_POSTGRES,
        secret,
        "config: {store: {postgres: {password_file: /elsewhere}}}",
    ]);
    assert_eq!(
        config_of(&docs)["store"]["postgres"]["password_file"],
        file.as_str()
    );
    // Without an fsGroup, the file is readable by the container's user anyway.
    let docs = render(&[ON_POSTGRES, secret, "podSecurityContext: {fsGroup: null}"]);
    let volumes = &workload(&docs)["spec"]["template"]["spec"]["volumes"];
    assert!(
        volumes
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["secret"]["defaultMode"] == 0o444),
        "{volumes}"
    );
    // Without a Secret: no volume, no password_file (PGPASSWORD, or the URL).
    let docs = render(&[ON_POSTGRES]);
    check_objects(&docs);
    assert!(
        config_of(&docs)["store"]["postgres"]
            .get("password_file")
            .is_none()
    );
    let docs = render(&[&read(&format!(
        "{CHART}/ci/postgres-pgpassword-values.yaml"
    ))]);
    check_objects(&docs);
    assert_eq!(workload(&docs)["kind"], "Deployment");
    assert!(
        config_of(&docs)["store"]["postgres"]
            .get("password_file")
            .is_none()
    );
    assert_eq!(
        container(&docs)["env"][0],
        json!({"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "toolscore-postgres", "key": "password"}}})
    );
    let volumes = &workload(&docs)["spec"]["template"]["spec"]["volumes"];
    assert!(
        volumes
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.get("secret").is_none()),
        "{volumes}"
    );
    // The memory backend has the log's volume only, and none without the
    // log; SQLite keeps its own.
    let docs = render(&["config: {store: {backend: memory}}"]);
    check_objects(&docs);
    assert_eq!(workload(&docs)["kind"], "Deployment");
    assert_eq!(config_of(&docs)["wal"]["dir"], "/var/lib/toolscore/wal");
    let docs = render(&["config: {store: {backend: memory}, wal: {enabled: false}}"]);
    check_objects(&docs);
    assert!(
        container(&docs)["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "data")
    );
    let docs = render(&[]);
    assert!(
        container(&docs)["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "data")
    );
}

/// A StatefulSet's `updateStrategy`, a Deployment's `strategy`: the same
/// value goes to whichever the chart runs (a StatefulSet only for SQLite
/// with persistence), and a type the other one has is refused.
#[test]
fn the_update_strategy_goes_where_the_workload_takes_it() {
    let docs = render(&["persistence: {enabled: false}\nupdateStrategy: {type: Recreate}"]);
    assert_eq!(workload(&docs)["spec"]["strategy"]["type"], "Recreate");
    let docs = render(&["updateStrategy: {type: OnDelete}"]);
    assert_eq!(
        workload(&docs)["spec"]["updateStrategy"]["type"],
        "OnDelete",
        "persistence (the default) runs a StatefulSet"
    );
    // Several replicas on PostgreSQL: a Deployment, whatever persistence says.
    let docs = render(&[
        ON_POSTGRES,
        "replicaCount: 3\nupdateStrategy: {type: Recreate}",
    ]);
    let w = workload(&docs);
    assert_eq!(w["kind"], "Deployment");
    assert_eq!(w["spec"]["strategy"]["type"], "Recreate");
    assert!(w["spec"].get("updateStrategy").is_none());
    let docs = render(&[
        ON_POSTGRES,
        "replicaCount: 3\nupdateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}",
    ]);
    assert_eq!(
        workload(&docs)["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        1
    );
    for (values, names) in [
        (
            "updateStrategy: {type: Recreate}",
            "Recreate is a Deployment strategy; with config.store.backend: sqlite and persistence.enabled",
        ),
        (
            "persistence: {enabled: false}\nupdateStrategy: {type: OnDelete}",
            "OnDelete is a StatefulSet strategy",
        ),
        (
            "replicaCount: 3\nupdateStrategy: {type: OnDelete}\nconfig: {store: {backend: postgres, postgres: {url: 'postgres://t@db/t'}}}",
            "OnDelete is a StatefulSet strategy; the chart runs a Deployment",
        ),
    ] {
        for err in refused(&[values]) {
            assert!(err.contains(names), "{values}: {err}");
        }
    }
}

#[test]
fn the_servicemonitor_selects_the_main_service_only() {
    let docs = render(&[&read(&format!("{CHART}/ci/servicemonitor-values.yaml"))]);
    let sm = find(&docs, "ServiceMonitor", RELEASE).unwrap();
    assert_eq!(sm["metadata"]["labels"]["release"], "prometheus");
    let endpoint = &sm["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "http");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["interval"], "15s");
    let selector = &sm["spec"]["selector"]["matchLabels"];
    let svc = find(&docs, "Service", RELEASE).unwrap();
    let headless = find(&docs, "Service", &format!("{RELEASE}-headless")).unwrap();
    assert!(selects(selector, &svc["metadata"]["labels"]));
    assert!(!selects(selector, &headless["metadata"]["labels"]));

    let docs = render(&["serviceMonitor: {enabled: true, interval: 1m30s, scrapeTimeout: 45s}"]);
    let sm = find(&docs, "ServiceMonitor", RELEASE).unwrap();
    assert_eq!(sm["spec"]["endpoints"][0]["interval"], "1m30s");
    let out = tools().validate_servicemonitors(&json!([sm]).to_string());
    assert!(out.ok, "{}", out.text());
}

#[test]
fn eval_set_and_evaluator_files_are_mounted_where_the_config_globs_look() {
    let docs = render(&[&read(&format!("{CHART}/ci/eval-sets-values.yaml"))]);
    let evaluators = find(&docs, "ConfigMap", &format!("{RELEASE}-evaluators")).unwrap();
    let sets = find(&docs, "ConfigMap", &format!("{RELEASE}-eval-sets")).unwrap();
    // JSON text stays as it is; YAML becomes JSON.
    for (cm, file) in [
        (evaluators, "tool-call-count.json"),
        (evaluators, "tool-call-order.json"),
        (sets, "weather.json"),
    ] {
        let text = cm["data"][file].as_str().unwrap();
        let v: Json = serde_json::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(v["version"], "1.0");
    }
    let config = config_of(&docs);
    assert_eq!(config["evaluators"]["files"], json!(["evaluators/*.json"]));
    assert_eq!(config["eval_sets"]["files"], json!(["eval-sets/*.json"]));
    assert_eq!(config["evaluators"]["inline"], json!([]));

    // Loaded by toolscore from where the pod mounts them.
    let dir = tempfile::tempdir().unwrap();
    let file = write_pod_files(&docs, dir.path());
    let loaded = toolscore::app::load_config(Some(&file)).unwrap();
    toolscore::criteria::Binder::load(loaded.0.binder(), loaded.1.as_deref()).unwrap();
    assert!(dir.path().join("eval-sets/weather.json").exists());

    // Without files there are no globs, mounts or ConfigMaps.
    let docs = render(&[]);
    let config = config_of(&docs);
    assert!(config.get("eval_sets").is_none());
    assert!(config["evaluators"].get("files").is_none());
    assert_eq!(docs.iter().filter(|d| d["kind"] == "ConfigMap").count(), 1);
}

#[test]
fn the_chart_owns_the_listeners() {
    let docs = render(&[
        "ports: {otlpGrpc: 14317}\nconfig: {receivers: {grpc: {endpoint: 127.0.0.1:9999}}, api: {http: {enabled: true}}}",
    ]);
    let config = config_of(&docs);
    assert_eq!(config["receivers"]["grpc"]["endpoint"], "0.0.0.0:14317");
    assert_eq!(config["api"]["http"]["endpoint"], "0.0.0.0:8080");
    assert_eq!(config["api"]["http"]["enabled"], true);
    let svc = find(&docs, "Service", RELEASE).unwrap();
    assert!(
        svc["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == 14317)
    );
}

#[test]
fn the_config_checksum_rolls_the_pods_when_the_config_or_files_change() {
    let base = checksum(&render(&[]));
    assert_eq!(base.len(), 64);
    assert_eq!(base, checksum(&render(&["replicaCount: 1"])));
    assert_ne!(
        base,
        checksum(&render(&["config: {store: {max_traces: 10}}"]))
    );
    assert_ne!(base, checksum(&render(&["ports: {http: 9080}"])));
    // The password Secret: its path enters the config (its content cannot).
    let on_postgres = checksum(&render(&[ON_POSTGRES]));
    assert_ne!(base, on_postgres);
    assert_ne!(
        on_postgres,
        checksum(&render(&[ON_POSTGRES, "postgres: {existingSecret: pg}"]))
    );
    // A file's content alone (the config, with its globs, stays the same).
    let one = checksum(&render(&["evaluators: {a.json: '{\"id\": 1}'}"]));
    assert_ne!(
        one,
        checksum(&render(&["evaluators: {a.json: '{\"id\": 2}'}"]))
    );
    let one = checksum(&render(&["evalSets: {a.json: '{\"id\": 1}'}"]));
    assert_ne!(
        one,
        checksum(&render(&["evalSets: {a.json: '{\"id\": 2}'}"]))
    );
}

/// What a Kubernetes user adds to a pod reaches it: volumes and mounts,
/// environment from Secrets, init containers, labels, probe handlers of
/// their own (ci/extras-values.yaml, which the schema checks above also
/// validate).
#[test]
fn extra_volumes_env_init_containers_and_probe_handlers_reach_the_pod() {
    let volumes = "extraVolumes: [{name: extra-evaluators, secret: {secretName: toolscore-evaluators}}]
extraVolumeMounts: [{name: extra-evaluators, mountPath: /etc/toolscore/extra-evaluators, readOnly: true}]";
    let docs = render(&[&read(&format!("{CHART}/ci/extras-values.yaml")), volumes]);
    check_objects(&docs);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("extras.yaml");
    write_manifest(&docs, &file);
    assert_kubernetes_valid(&[file]);
    let w = workload(&docs);
    assert_eq!(w["spec"]["revisionHistoryLimit"], 3);
    assert_eq!(w["spec"]["strategy"]["type"], "Recreate");
    let pod = &w["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["team"], "agents");
    let spec = &pod["spec"];
    assert_eq!(spec["initContainers"][0]["name"], "wait-for-collector");
    assert!(
        spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "extra-evaluators")
    );
    let c = &spec["containers"][0];
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "extra-evaluators")
    );
    assert_eq!(c["envFrom"][0]["secretRef"]["name"], "toolscore-env");
    // A handler of the user's own replaces the default HTTP GET.
    assert_eq!(c["livenessProbe"]["tcpSocket"]["port"], "http");
    assert!(c["livenessProbe"].get("httpGet").is_none());
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    let np = find(&docs, "NetworkPolicy", RELEASE).unwrap();
    let rules = np["spec"]["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(
        rules[0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "opentelemetry-collector"
    );
    assert!(rules[1].get("from").is_none(), "the APIs from anywhere");
}

#[test]
fn an_existing_configmap_replaces_the_rendered_one() {
    let docs = render(&["existingConfigMap: my-toolscore-config"]);
    assert!(find(&docs, "ConfigMap", RELEASE).is_none());
    let volumes = &workload(&docs)["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[0]["configMap"]["name"], "my-toolscore-config");
    assert!(notes(&["existingConfigMap: my-toolscore-config"]).contains("my-toolscore-config"));
}

/// `helm test` runs the chart's own image against GET /readyz through the
/// Service (`toolscore probe`, tested in tests/demo.rs).
#[test]
fn helm_test_probes_readyz_through_the_service() {
    let docs = render(&["ports: {http: 9080}"]);
    let test = docs.iter().find(|d| d["kind"] == "Pod").unwrap();
    assert_eq!(test["metadata"]["annotations"]["helm.sh/hook"], "test");
    let c = &test["spec"]["containers"][0];
    assert_eq!(c["image"], container(&docs)["image"]);
    assert_eq!(
        c["args"],
        json!([
            "probe",
            format!("http://{RELEASE}.{NAMESPACE}.svc:9080/readyz")
        ])
    );
    assert_eq!(test["spec"]["restartPolicy"], "Never");
    assert!(
        render(&["tests: {enabled: false}"])
            .iter()
            .all(|d| d["kind"] != "Pod")
    );
}

#[test]
fn notes_point_several_replicas_at_the_headless_service_and_warn_of_exposure() {
    let one = notes(&[]);
    assert!(
        one.contains(&format!(
            "{RELEASE}.{NAMESPACE}.svc.cluster.local:4317 (gRPC)"
        )),
        "{one}"
    );
    assert!(
        one.contains("image.repository is the chart's default"),
        "{one}"
    );
    assert!(!one.contains("LoadBalancer"), "{one}");
    assert!(
        one.contains("(1 pod, a StatefulSet; results in SQLite)"),
        "{one}"
    );
    assert!(
        one.contains("stored in SQLite on a PersistentVolumeClaim") && !one.contains("emptyDir"),
        "{one}"
    );
    assert!(!one.contains("PostgreSQL"), "{one}");
    let ephemeral = notes(&["persistence: {enabled: false}"]);
    assert!(
        ephemeral.contains("WARNING: persistence.enabled is false"),
        "{ephemeral}"
    );
    assert!(
        ephemeral.contains("(1 pod, a Deployment; results in SQLite)"),
        "{ephemeral}"
    );
    let memory = notes(&["config: {store: {backend: memory}}"]);
    assert!(
        memory.contains("WARNING: config.store.backend is memory")
            && !memory.contains("persistence.enabled is false"),
        "{memory}"
    );

    let three = notes(&[&read(&format!("{CHART}/ci/multi-replica-values.yaml"))]);
    assert!(
        three.contains(&format!(
            "hostname: {RELEASE}-headless.{NAMESPACE}.svc.cluster.local"
        )),
        "{three}"
    );
    assert!(three.contains("routing_key: traceID"), "{three}");
    assert!(
        three.contains("every span of a trace must reach the same pod"),
        "{three}"
    );
    assert!(
        !three.contains("(gRPC)"),
        "no plain-Service OTLP address: {three}"
    );
    assert!(
        three.contains("(3 pods, a Deployment; results in PostgreSQL)"),
        "{three}"
    );
    // Queries through the Service work for every trace; the text that each
    // pod keeps its own SQLite file is gone.
    assert!(
        three.contains("shared through PostgreSQL: a query through the Service toolscore")
            && three.contains("answers for every trace"),
        "{three}"
    );
    for gone in ["404", "own SQLite", "PersistentVolumeClaim", "emptyDir"] {
        assert!(!three.contains(gone), "{gone}: {three}");
    }
    // The password Secret, and how to create it.
    assert!(
        three.contains("the key password of the Secret toolscore-postgres")
            && three.contains(&format!(
                "kubectl --namespace {NAMESPACE} create secret generic toolscore-postgres --from-literal=password="
            )),
        "{three}"
    );
    let no_secret = notes(&[ON_POSTGRES]);
    assert!(
        no_secret.contains("postgres.existingSecret is empty") && no_secret.contains("PGPASSWORD"),
        "{no_secret}"
    );
    assert!(no_secret.contains(&format!(
        "{RELEASE}.{NAMESPACE}.svc.cluster.local:4317 (gRPC)"
    )));

    let exposed =
        notes(&["service: {type: LoadBalancer}\nimage: {repository: registry.example/toolscore}"]);
    assert!(
        exposed.contains("WARNING: service.type is LoadBalancer"),
        "{exposed}"
    );
    assert!(
        exposed.contains("Without TLS (tls.existingSecret): OTLP/gRPC 4317, OTLP/HTTP 4318, HTTP API 8080, gRPC API 8081.")
            && exposed.contains("Without bearer tokens (auth.existingSecret): OTLP/gRPC 4317"),
        "{exposed}"
    );
    assert!(
        !exposed.contains("image.repository is the chart's default"),
        "{exposed}"
    );
}

/// Every object schema with `properties` is closed; values.yaml gives only
/// keys it knows, and every key of the chart's own objects (those whose
/// schema requires all its properties): values.yaml documents them. Probe
/// and strategy objects are Kubernetes' and keep their optional keys;
/// `global` is Helm's, given to every subchart.
#[test]
fn the_schema_is_closed_and_matches_values_yaml_key_for_key() {
    fn walk(schema: &Json, values: Option<&Json>, path: &str) {
        let Some(props) = schema.get("properties").and_then(Json::as_object) else {
            return;
        };
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&json!(false)),
            "{path} must be closed"
        );
        if let Some(values) = values.and_then(Json::as_object) {
            let in_schema: BTreeSet<&str> = props
                .keys()
                .map(String::as_str)
                .filter(|k| !(path == "values" && *k == "global"))
                .collect();
            let in_values: BTreeSet<&str> = values.keys().map(String::as_str).collect();
            let required: BTreeSet<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .collect();
            if in_schema.is_subset(&required) {
                assert_eq!(in_schema, in_values, "keys of {path}");
            } else {
                assert!(in_values.is_subset(&in_schema), "keys of {path}");
            }
        }
        for (k, sub) in props {
            walk(sub, values.and_then(|v| v.get(k)), &format!("{path}.{k}"));
        }
    }
    let schema: Json = serde_json::from_str(&read(&format!("{CHART}/values.schema.json"))).unwrap();
    walk(
        &schema,
        Some(&yaml(&format!("{CHART}/values.yaml"))),
        "values",
    );
}

/// Every `.Values.a.b` the templates read exists in values.yaml (Helm
/// renders a missing one as nothing, silently).
#[test]
fn every_values_reference_in_the_templates_exists_in_values_yaml() {
    let re = regex::Regex::new(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)").unwrap();
    let values = yaml(&format!("{CHART}/values.yaml"));
    let mut seen = 0;
    let mut dirs = vec![chart_dir().join("templates")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for m in re.captures_iter(&text) {
                let key = &m[1][1..];
                let mut node = &values;
                for part in key.split('.') {
                    node = node.get(part).unwrap_or_else(|| {
                        panic!("{}: .Values.{key} is not in values.yaml", path.display())
                    });
                }
                seen += 1;
            }
        }
    }
    assert!(seen > 60, "only {seen} references found");
}

/// The values that turn on TLS and tokens (ci/tls-auth-values.yaml).
fn tls_auth_values() -> String {
    read(&format!("{CHART}/ci/tls-auth-values.yaml"))
}

/// TLS and bearer tokens (ci/tls-auth-values.yaml): valid objects (both
/// Helms, the Kubernetes schemas, the ServiceMonitor's CRD); every listener's
/// `tls:` block names the mounted kubernetes.io/tls Secret's files; the
/// token files are the mounted token Secret's keys, with their scopes; and
/// toolscore loads that config with the Secrets' files where the pod has them.
#[test]
fn tls_and_tokens_render_valid_objects_and_a_config_naming_the_mounted_secrets() {
    let docs = render(&[&tls_auth_values()]);
    check_objects(&docs);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tls-auth.yaml");
    write_manifest(&docs, &file);
    assert_kubernetes_valid(&[file]);
    let monitors: Vec<Json> = docs
        .iter()
        .filter(|d| d["kind"] == "ServiceMonitor")
        .cloned()
        .collect();
    let out = tools().validate_servicemonitors(&Json::Array(monitors).to_string());
    assert!(out.ok, "{}", out.text());

    let config = config_of(&docs);
    let blocks = tls_blocks(&config);
    assert_eq!(blocks.len(), 4, "TLS on every listener: {config}");
    for (listener, tls) in &blocks {
        assert_eq!(tls["cert_file"], "/etc/toolscore/tls/tls.crt", "{listener}");
        assert_eq!(tls["key_file"], "/etc/toolscore/tls/tls.key", "{listener}");
        assert_eq!(tls["min_version"], "1.3", "{listener}");
        assert!(
            tls.get("client_ca_file").is_none(),
            "{listener}: no clientAuth"
        );
    }
    // The block's other keys come from `config`, merged.
    assert_eq!(
        config["receivers"]["grpc"]["tls"]["handshake_timeout_ms"],
        5000
    );
    for (a, b) in [
        ("receivers", "grpc"),
        ("receivers", "http"),
        ("api", "http"),
        ("api", "grpc"),
    ] {
        assert_eq!(config[a][b]["auth"]["enabled"], true, "{a}.{b}");
    }
    assert_eq!(config["api"]["http"]["auth"]["public_metrics"], false);
    assert_eq!(
        config["auth"],
        json!({
            "reload_interval_secs": 15,
            "tokens": [
                {"name": "secret-ingest", "file": "/etc/toolscore/auth/ingest", "scopes": ["ingest"]},
                {"name": "secret-read", "file": "/etc/toolscore/auth/read", "scopes": ["read"]},
                {"name": "secret-evaluate", "file": "/etc/toolscore/auth/evaluate", "scopes": ["evaluate"]},
                {"name": "secret-metrics", "file": "/etc/toolscore/auth/metrics", "scopes": ["metrics"]},
            ]
        })
    );

    // The two Secrets, whole (no items, no subPath), read-only, where the
    // config looks.
    let pod = &workload(&docs)["spec"]["template"]["spec"];
    let volumes = pod["volumes"].as_array().unwrap();
    for (name, secret, path) in [
        ("tls", "toolscore-tls", "/etc/toolscore/tls"),
        ("auth-tokens", "toolscore-tokens", "/etc/toolscore/auth"),
    ] {
        let v = volumes.iter().find(|v| v["name"] == name).unwrap();
        assert_eq!(
            v["secret"],
            json!({"secretName": secret, "defaultMode": 0o440}),
            "{name}"
        );
        let m = container(&docs)["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap();
        assert_eq!(
            *m,
            json!({"name": name, "mountPath": path, "readOnly": true})
        );
    }
    // The Secrets' names stay out of the ConfigMap.
    let cm = serde_json::to_string(find(&docs, "ConfigMap", RELEASE).unwrap()).unwrap();
    assert!(
        !cm.contains("toolscore-tls") && !cm.contains("toolscore-tokens"),
        "{cm}"
    );

    // toolscore takes it, reading the certificate and the token files laid
    // out as the pod has them (needs the TLS and auth keys in toolscore).
    let pod_dir = tempfile::tempdir().unwrap();
    let config_file = write_pod_files_with(&docs, pod_dir.path(), &secret_fixtures());
    assert!(pod_dir.path().join("tls/tls.key").exists());
    assert!(pod_dir.path().join("auth/ingest").exists());
    validate_config(&config_file).unwrap();
    // And refuses it when a named token file is not in the Secret.
    std::fs::remove_file(pod_dir.path().join("auth/metrics")).unwrap();
    let err = validate_config(&config_file).unwrap_err();
    assert!(err.contains("auth/metrics"), "{err}");

    // Without the Secrets: no blocks, no volumes (the defaults).
    let docs = render(&[]);
    let config = config_of(&docs);
    assert!(tls_blocks(&config).is_empty());
    assert!(config.get("auth").is_none(), "{config}");
    assert!(config["api"]["http"].get("auth").is_none());
    let volumes = workload(&docs)["spec"]["template"]["spec"]["volumes"].to_string();
    assert!(!volumes.contains("secret"), "{volumes}");
}

/// Which listeners get TLS or tokens; mutual TLS; several scopes on one key;
/// tokens of `config.auth.tokens` kept after the chart's; the chart's
/// refusals of what could never work.
#[test]
fn tls_and_token_values_choose_listeners_scopes_and_client_certificates() {
    let docs = render(&[
        "tls: {existingSecret: s, clientAuth: true, listeners: {http: false}}
auth:
  existingSecret: t
  tokenKeys: {ingest: collector, read: people, evaluate: people, metrics: ''}
  listeners: {otlpHttp: false}
config: {auth: {tokens: [{name: ci, env: CI_TOKEN, scopes: [read]}]}}",
    ]);
    check_objects(&docs);
    let config = config_of(&docs);
    let blocks = tls_blocks(&config);
    let names: Vec<&str> = blocks.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(names, ["receivers.grpc", "receivers.http", "api.grpc"]);
    for (l, tls) in &blocks {
        assert_eq!(tls["client_ca_file"], "/etc/toolscore/tls/ca.crt", "{l}");
        assert_eq!(tls["min_version"], "1.2", "{l}");
    }
    assert!(config["receivers"]["http"].get("auth").is_none());
    assert_eq!(config["receivers"]["grpc"]["auth"]["enabled"], true);
    assert_eq!(config["api"]["http"]["auth"]["public_metrics"], true);
    assert_eq!(
        config["auth"]["tokens"],
        json!([
            {"name": "secret-collector", "file": "/etc/toolscore/auth/collector", "scopes": ["ingest"]},
            {"name": "secret-people", "file": "/etc/toolscore/auth/people", "scopes": ["read", "evaluate"]},
            {"name": "ci", "env": "CI_TOKEN", "scopes": ["read"]},
        ])
    );
    // The HTTP API stays plaintext, so probes and `helm test` stay HTTP.
    assert!(
        container(&docs)["readinessProbe"]["httpGet"]
            .get("scheme")
            .is_none()
    );
    assert!(docs.iter().any(|d| d["kind"] == "Pod"));
    // minVersion given as a number (`--set tls.minVersion=1.3`) is a string in the config.
    let docs = render(&["tls: {existingSecret: s, minVersion: 1.3}"]);
    assert_eq!(config_of(&docs)["api"]["grpc"]["tls"]["min_version"], "1.3");

    for (values, names) in [
        (
            "tls: {clientAuth: true}",
            "tls.clientAuth needs tls.existingSecret",
        ),
        (
            "tls: {existingSecret: s, clientAuth: true}",
            "the kubelet presents no client certificate",
        ),
        (
            "auth: {existingSecret: t, tokenKeys: {ingest: ''}}",
            "auth.listeners.otlpGrpc is on but no token has the scope it needs (ingest)",
        ),
        (
            "auth: {existingSecret: t, tokenKeys: {read: ''}}",
            "auth.listeners.http is on but no token has the scope it needs (read or evaluate or metrics)",
        ),
        (
            "auth: {existingSecret: t, publicMetrics: false}\nserviceMonitor: {enabled: true}",
            "the ServiceMonitor has none",
        ),
    ] {
        for err in refused(&[values]) {
            assert!(err.contains(names), "{values}: {err}");
        }
    }
    // Mutual TLS on the HTTP API with probe handlers of the user's own.
    let docs = render(&["tls: {existingSecret: s, clientAuth: true}
startupProbe: {tcpSocket: {port: http}, periodSeconds: 2, failureThreshold: 30}
livenessProbe: {tcpSocket: {port: http}}
readinessProbe: {tcpSocket: {port: http}}"]);
    assert_eq!(
        container(&docs)["readinessProbe"]["tcpSocket"]["port"],
        "http"
    );
    // The `helm test` pod has no client certificate: left out.
    assert!(docs.iter().all(|d| d["kind"] != "Pod"));
    // A token from config.auth.tokens can be the one a listener needs.
    let docs = render(&[
        "auth: {existingSecret: t, tokenKeys: {ingest: ''}}\nconfig: {auth: {tokens: [{name: c, env: T, scopes: [ingest]}]}}",
    ]);
    assert_eq!(
        config_of(&docs)["auth"]["tokens"].as_array().unwrap().len(),
        2
    );
}

/// With the HTTP API on TLS the chart's probes GET over HTTPS (the kubelet
/// does not verify the certificate; /healthz and /readyz never need a
/// token); handlers of the user's own are left alone; the `helm test` pod
/// probes over HTTPS with the Secret's CA (its only key mounted), and is
/// left out under mutual TLS.
#[test]
fn probes_switch_to_https_with_tls_on_the_http_api() {
    let docs = render(&[&tls_auth_values()]);
    let c = container(&docs);
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": path, "port": "http", "scheme": "HTTPS"}),
            "{probe}"
        );
    }
    let test = docs.iter().find(|d| d["kind"] == "Pod").unwrap();
    let spec = &test["spec"];
    assert_eq!(
        spec["containers"][0]["args"],
        json!([
            "probe",
            "--ca-file",
            "/etc/toolscore/tls/ca.crt",
            format!("https://{RELEASE}.{NAMESPACE}.svc:8080/readyz")
        ])
    );
    assert_eq!(
        spec["volumes"][0]["secret"]["items"],
        json!([{"key": "ca.crt", "path": "ca.crt"}]),
        "only the CA, never the key"
    );
    assert_eq!(spec["volumes"][0]["secret"]["secretName"], "toolscore-tls");
    assert_eq!(
        spec["containers"][0]["volumeMounts"][0]["mountPath"],
        "/etc/toolscore/tls"
    );
    let docs = render(&[
        &tls_auth_values(),
        "livenessProbe: {tcpSocket: {port: http}}",
    ]);
    assert!(container(&docs)["livenessProbe"].get("httpGet").is_none());
    assert_eq!(
        container(&docs)["readinessProbe"]["httpGet"]["scheme"],
        "HTTPS"
    );
    // Tokens alone change no probe.
    let docs = render(&["auth: {existingSecret: t}"]);
    assert_eq!(
        container(&docs)["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": "http"})
    );
    assert!(docs.iter().any(|d| d["kind"] == "Pod"));
}

/// The ServiceMonitor scrapes over HTTPS against the tls Secret's CA, for
/// the Service's name, and with the metrics token when /metrics needs one;
/// the user's own tlsConfig and authorization win. The CRD schema takes both.
#[test]
fn the_servicemonitor_scrapes_over_https_with_a_token_when_metrics_need_one() {
    let docs = render(&[&tls_auth_values()]);
    let endpoint = &find(&docs, "ServiceMonitor", RELEASE).unwrap()["spec"]["endpoints"][0];
    assert_eq!(endpoint["scheme"], "https");
    assert_eq!(
        endpoint["tlsConfig"],
        json!({"ca": {"secret": {"name": "toolscore-tls", "key": "ca.crt"}}, "serverName": format!("{RELEASE}.{NAMESPACE}.svc")})
    );
    assert_eq!(
        endpoint["authorization"],
        json!({"type": "Bearer", "credentials": {"name": "toolscore-tokens", "key": "metrics"}})
    );
    let own = render(&[
        &tls_auth_values(),
        "serviceMonitor:
  tlsConfig: {insecureSkipVerify: true}
  authorization: {type: Bearer, credentials: {name: prometheus-token, key: token}}",
    ]);
    let sm = find(&own, "ServiceMonitor", RELEASE).unwrap();
    let endpoint = &sm["spec"]["endpoints"][0];
    assert_eq!(endpoint["tlsConfig"], json!({"insecureSkipVerify": true}));
    assert_eq!(
        endpoint["authorization"]["credentials"]["name"],
        "prometheus-token"
    );
    let out = tools().validate_servicemonitors(&json!([sm]).to_string());
    assert!(out.ok, "{}", out.text());
    // Public /metrics and plaintext: neither.
    let docs = render(&["serviceMonitor: {enabled: true}\nauth: {existingSecret: t}"]);
    let endpoint = &find(&docs, "ServiceMonitor", RELEASE).unwrap()["spec"]["endpoints"][0];
    for key in ["scheme", "tlsConfig", "authorization"] {
        assert!(endpoint.get(key).is_none(), "{key}: {endpoint}");
    }
}

/// The install notes warn when the Service is published outside the cluster
/// (LoadBalancer, NodePort) with listeners lacking TLS or tokens, naming
/// them; not when both are on everywhere, nor for a ClusterIP Service.
#[test]
fn notes_warn_of_a_published_service_without_tls_or_tokens() {
    let both = notes(&[&tls_auth_values()]);
    assert!(!both.contains("WARNING: service.type"), "{both}");
    assert!(
        both.contains("(gRPC, TLS)")
            && both.contains(&format!(
                "https://{RELEASE}.{NAMESPACE}.svc.cluster.local:4318/v1/traces"
            )),
        "{both}"
    );
    assert!(
        both.contains("--from-file=ingest=ingest.txt --from-file=read=read.txt --from-file=evaluate=evaluate.txt --from-file=metrics=metrics.txt"),
        "{both}"
    );
    assert!(
        both.contains("Check that it is ready (over HTTPS, against the Secret's ca.crt)"),
        "{both}"
    );
    assert!(
        both.contains("over HTTPS") && both.contains("with a bearer token"),
        "{both}"
    );

    let none = notes(&["service: {type: LoadBalancer}"]);
    assert!(
        none.contains("WARNING: service.type is LoadBalancer")
            && none.contains("Without TLS (tls.existingSecret): OTLP/gRPC 4317, OTLP/HTTP 4318, HTTP API 8080, gRPC API 8081.")
            && none.contains("Without bearer tokens (auth.existingSecret): OTLP/gRPC 4317, OTLP/HTTP 4318, HTTP API 8080, gRPC API 8081."),
        "{none}"
    );
    let tls_only = notes(&["service: {type: NodePort}\ntls: {existingSecret: s}"]);
    assert!(
        tls_only.contains("WARNING: service.type is NodePort")
            && !tls_only.contains("Without TLS")
            && tls_only.contains("Without bearer tokens (auth.existingSecret)"),
        "{tls_only}"
    );
    let partial = notes(&[
        &tls_auth_values(),
        "tls: {listeners: {grpc: false}}\nauth: {listeners: {otlpHttp: false}}",
    ]);
    assert!(
        partial.contains("Without TLS (tls.existingSecret, tls.listeners): gRPC API 8081.")
            && partial.contains(
                "Without bearer tokens (auth.existingSecret, auth.listeners): OTLP/HTTP 4318."
            ),
        "{partial}"
    );
    let internal = notes(&[]);
    assert!(!internal.contains("WARNING: service.type"), "{internal}");
}
