//! The deployment artefacts, checked without Docker, Kubernetes or helm (none
//! runs here):
//! - `Dockerfile`, parsed by `dockerfile-parser`, against
//!   `config/container.yaml`, which `toolscore validate-config` checks;
//! - the Helm chart: its YAML files parse; `values.yaml` and every
//!   `ci/*-values.yaml` validate against `values.schema.json` (`jsonschema`);
//!   every `.Values` reference exists; and the templates render — Go templates
//!   by `gtmpl`, with the Sprig functions the chart uses implemented in
//!   [`helm`] below — into Kubernetes objects that hang together and a config
//!   that `toolscore validate-config` accepts;
//! - the Collector configs and `docker-compose.yaml`: their structure.
//!
//! Not checked here: a real `docker build`, `helm lint`/`helm template`
//! (Helm's own renderer), the Kubernetes API's validation, a running Collector.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value as Json, json};
use toolscore::config::Config;

const CHART: &str = "deploy/helm/toolscore";
const RELEASE: &str = "toolscore";
const NAMESPACE: &str = "observability";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(rel: &str) -> Json {
    serde_yaml_ng::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `toolscore validate-config FILE`: Ok, or what it printed.
fn validate_config(path: &Path) -> Result<(), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .arg("validate-config")
        .arg(path)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Whether this build's config knows the `exporter` section (issue #4). A
/// config that uses it is skipped, with a note, while it does not.
fn knows_exporter() -> bool {
    static KNOWS: OnceLock<bool> = OnceLock::new();
    *KNOWS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("exporter.yaml");
        std::fs::write(&file, "exporter:\n  enabled: false\n").unwrap();
        match validate_config(&file) {
            Ok(()) => true,
            Err(e) if e.contains("unknown field `exporter`") => false,
            Err(e) => panic!("validate-config of a bare exporter section: {e}"),
        }
    })
}

/// Validates a config file, or skips it (saying so) when it uses the
/// `exporter` section and this build does not know it yet.
fn validate_or_skip(path: &Path, config: &Json) {
    if config.get("exporter").is_some() && !knows_exporter() {
        eprintln!(
            "SKIPPED validate-config {}: it uses `exporter`, which this build's config does not know yet",
            path.display()
        );
        return;
    }
    if let Err(e) = validate_config(path) {
        panic!(
            "{}: {e}\n{}",
            path.display(),
            std::fs::read_to_string(path).unwrap()
        );
    }
}

/// Removes `keys` (dotted paths) and then every map left empty.
fn without(mut v: Json, keys: &[&str]) -> Json {
    for key in keys {
        let parts: Vec<&str> = key.split('.').collect();
        let (last, parents) = parts.split_last().unwrap();
        let parent = parents.iter().try_fold(&mut v, |n, p| n.get_mut(*p));
        if let Some(m) = parent.and_then(Json::as_object_mut) {
            m.remove(*last);
        }
    }
    prune_empty(&mut v);
    v
}

fn prune_empty(v: &mut Json) {
    if let Some(m) = v.as_object_mut() {
        for child in m.values_mut() {
            prune_empty(child);
        }
        m.retain(|_, c| !c.as_object().is_some_and(|o| o.is_empty()));
    }
}

/// The four listeners of a config, by key.
const LISTENERS: [&str; 4] = [
    "receivers.grpc.endpoint",
    "receivers.http.endpoint",
    "api.http.endpoint",
    "api.grpc.endpoint",
];

fn bound_ports(config: &Config) -> BTreeSet<u16> {
    [
        config.receivers.grpc.endpoint,
        config.receivers.http.endpoint,
        config.api.http.endpoint,
        config.api.grpc.endpoint,
    ]
    .iter()
    .map(|a| a.port())
    .collect()
}

// ---------------------------------------------------------------------------
// Dockerfile and config/container.yaml

mod docker {
    use dockerfile_parser::{Dockerfile, Instruction, ShellOrExecExpr};

    /// One stage, its instructions as (KEYWORD, arguments) in order.
    #[derive(Debug)]
    pub struct Stage {
        pub name: Option<String>,
        pub base: String,
        pub instructions: Vec<(String, String)>,
        /// `COPY`: (--from, sources, destination).
        pub copies: Vec<(Option<String>, Vec<String>, String)>,
        pub labels: Vec<(String, String)>,
        pub entrypoint: Option<Vec<String>>,
        pub cmd: Option<Vec<String>>,
    }

    impl Stage {
        pub fn all(&self, keyword: &str) -> Vec<&str> {
            self.instructions
                .iter()
                .filter(|(k, _)| k == keyword)
                .map(|(_, a)| a.as_str())
                .collect()
        }

        pub fn position(&self, pred: impl Fn(&str, &str) -> bool) -> Option<usize> {
            self.instructions.iter().position(|(k, a)| pred(k, a))
        }
    }

    fn exec(expr: &ShellOrExecExpr) -> Vec<String> {
        match expr {
            ShellOrExecExpr::Exec(a) => a.elements.iter().map(|e| e.content.clone()).collect(),
            ShellOrExecExpr::Shell(s) => vec!["/bin/sh".into(), "-c".into(), s.to_string()],
        }
    }

    /// Parses a Dockerfile into stages; Err for a file the parser refuses.
    /// `ARG`s before the first `FROM`: (name, default).
    pub type GlobalArgs = Vec<(String, Option<String>)>;

    pub fn parse(text: &str) -> Result<(GlobalArgs, Vec<Stage>), String> {
        let file = Dockerfile::parse(text).map_err(|e| e.to_string())?;
        let global_args = file
            .global_args
            .iter()
            .map(|a| {
                (
                    a.name.content.clone(),
                    a.value.as_ref().map(|v| v.content.clone()),
                )
            })
            .collect();
        let mut stages = Vec::new();
        for stage in file.iter_stages() {
            let mut s = Stage {
                name: stage.name.clone(),
                base: String::new(),
                instructions: Vec::new(),
                copies: Vec::new(),
                labels: Vec::new(),
                entrypoint: None,
                cmd: None,
            };
            for ins in &stage.instructions {
                let (keyword, args) = match ins {
                    Instruction::From(f) => {
                        s.base = f.image.content.clone();
                        ("FROM".to_owned(), f.image.content.clone())
                    }
                    Instruction::Arg(a) => (
                        "ARG".into(),
                        match &a.value {
                            Some(v) => format!("{}={}", a.name.content, v.content),
                            None => a.name.content.clone(),
                        },
                    ),
                    Instruction::Label(l) => {
                        for label in &l.labels {
                            s.labels
                                .push((label.name.content.clone(), label.value.content.clone()));
                        }
                        ("LABEL".into(), String::new())
                    }
                    Instruction::Run(r) => ("RUN".into(), exec(&r.expr).join(" ")),
                    Instruction::Entrypoint(e) => {
                        s.entrypoint = Some(exec(&e.expr));
                        ("ENTRYPOINT".into(), exec(&e.expr).join(" "))
                    }
                    Instruction::Cmd(c) => {
                        s.cmd = Some(exec(&c.expr));
                        ("CMD".into(), exec(&c.expr).join(" "))
                    }
                    Instruction::Copy(c) => {
                        let from = c
                            .flags
                            .iter()
                            .find(|f| f.name.content == "from")
                            .map(|f| f.value.content.clone());
                        let sources: Vec<String> =
                            c.sources.iter().map(|x| x.content.clone()).collect();
                        s.copies
                            .push((from, sources.clone(), c.destination.content.clone()));
                        (
                            "COPY".into(),
                            format!("{} {}", sources.join(" "), c.destination.content),
                        )
                    }
                    Instruction::Env(_) => ("ENV".into(), String::new()),
                    Instruction::Misc(m) => (
                        m.instruction.content.to_uppercase(),
                        m.arguments.to_string(),
                    ),
                };
                s.instructions.push((keyword, args.trim().to_owned()));
            }
            stages.push(s);
        }
        Ok((global_args, stages))
    }
}

fn dockerfile() -> (docker::GlobalArgs, Vec<docker::Stage>) {
    docker::parse(&read("Dockerfile")).unwrap_or_else(|e| panic!("Dockerfile: {e}"))
}

#[test]
fn the_dockerfile_parser_refuses_a_broken_file() {
    assert!(docker::parse("FROM\nRUN\n").is_err());
    let (_, stages) = docker::parse("FROM a AS b\nEXPOSE 1 2\nUSER x\n").unwrap();
    assert_eq!(stages[0].all("EXPOSE"), ["1 2"]);
}

#[test]
fn dockerfile_has_a_pinned_build_stage_and_a_small_runtime_stage() {
    let (global_args, stages) = dockerfile();
    assert_eq!(stages.len(), 2, "{stages:#?}");
    let (build, runtime) = (&stages[0], &stages[1]);

    // The Rust image is official and pinned to a version, not `latest`.
    let rust_version = global_args
        .iter()
        .find(|(n, _)| n == "RUST_VERSION")
        .and_then(|(_, v)| v.clone())
        .expect("ARG RUST_VERSION=x.y.z before the first FROM");
    assert!(
        rust_version.split('.').count() == 3
            && rust_version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "RUST_VERSION {rust_version:?} is not a full version"
    );
    let base = build.base.replace("${RUST_VERSION}", &rust_version);
    assert!(
        base.starts_with("docker.io/library/rust:") || base.starts_with("rust:"),
        "{base}"
    );
    assert!(!base.contains("latest"), "{base}");
    let toolchain: Vec<u32> = rust_version
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        toolchain >= vec![1, 85, 0],
        "the crate needs Rust 1.85 (edition 2024)"
    );

    // Runtime: distroless cc (or debian-slim), on the same Debian as the build.
    assert!(
        runtime.base == "gcr.io/distroless/cc-debian12:nonroot"
            || runtime.base.starts_with("debian:"),
        "{}",
        runtime.base
    );
    if runtime.base.contains("debian12") {
        assert!(
            base.ends_with("-bookworm"),
            "build on Debian 12 too: {base}"
        );
    }
    assert!(runtime.name.is_some());
    assert!(build.name.as_deref() == Some("build"));
}

#[test]
fn dockerfile_caches_dependencies_before_the_source() {
    let (_, stages) = dockerfile();
    let build = &stages[0];
    let copy_of = |what: &str| {
        build
            .position(|k, a| k == "COPY" && a.split_whitespace().any(|s| s == what))
            .unwrap_or_else(|| panic!("the build stage copies {what}"))
    };
    let builds: Vec<usize> = build
        .instructions
        .iter()
        .enumerate()
        .filter(|(_, (k, a))| k == "RUN" && a.contains("cargo build --release --locked"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(builds.len(), 2, "a dependency build and the real build");
    for manifest in ["Cargo.toml", "Cargo.lock", "build.rs", "proto"] {
        assert!(
            copy_of(manifest) < builds[0],
            "{manifest} before the first build"
        );
    }
    assert!(builds[0] < copy_of("src") && copy_of("src") < builds[1]);
    assert!(
        copy_of("config") < builds[1],
        "include_str! needs config/default.yaml"
    );
    // The stub build compiles a stub crate, and the real one rebuilds it.
    assert!(build.instructions[builds[0]].1.contains("src/main.rs"));
    assert!(
        build.instructions[builds[1]]
            .1
            .contains("touch src/main.rs src/lib.rs")
    );
}

#[test]
fn dockerfile_runtime_stage_is_non_root_and_has_no_healthcheck() {
    let (_, stages) = dockerfile();
    let runtime = stages.last().unwrap();
    let users = runtime.all("USER");
    let user = users.last().expect("the runtime stage sets USER");
    assert!(
        !["root", "0", "0:0", "root:root"].contains(user),
        "USER {user}"
    );
    for stage in &stages {
        assert!(
            stage.all("HEALTHCHECK").is_empty(),
            "probes live in Kubernetes"
        );
    }
    assert_eq!(
        runtime.entrypoint.as_deref(),
        Some(&["/usr/local/bin/toolscore".to_owned()][..])
    );
    let binary = runtime
        .copies
        .iter()
        .find(|(_, _, dest)| dest == "/usr/local/bin/toolscore")
        .expect("the binary is copied");
    assert_eq!(binary.0.as_deref(), stages[0].name.as_deref());

    let labels: BTreeMap<&str, &str> = runtime
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for key in ["title", "description", "version", "licenses", "revision"] {
        let key = format!("org.opencontainers.image.{key}");
        assert!(labels.contains_key(key.as_str()), "label {key}");
    }
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    let version_arg = format!("VERSION={}", env!("CARGO_PKG_VERSION"));
    assert!(
        runtime.all("ARG").contains(&version_arg.as_str()),
        "the image version defaults to the crate's: ARG {version_arg}"
    );
}

#[test]
fn dockerfile_runs_the_container_config_and_exposes_exactly_its_ports() {
    let (_, stages) = dockerfile();
    let runtime = stages.last().unwrap();
    let cmd = runtime.cmd.clone().expect("CMD");
    assert_eq!(cmd[..2], ["serve", "--config"]);
    let config_path = &cmd[2];
    let copied = runtime
        .copies
        .iter()
        .find(|(_, _, dest)| dest == config_path)
        .unwrap_or_else(|| panic!("nothing is copied to {config_path}"));
    assert_eq!(copied.0, None, "copied from the build context");
    assert_eq!(copied.1, ["config/container.yaml"]);

    let exposed: BTreeSet<u16> = runtime
        .all("EXPOSE")
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(|p| p.trim_end_matches("/tcp").parse().unwrap())
        .collect();
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    assert_eq!(exposed, bound_ports(&config));
    assert_eq!(exposed, BTreeSet::from([4317, 4318, 8080, 8081]));
}

#[test]
fn dockerignore_keeps_what_the_build_copies() {
    let ignored: Vec<String> = read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_end_matches('/').to_owned())
        .collect();
    assert!(ignored.iter().any(|l| l == "target"), "target/ stays out");
    assert!(ignored.iter().any(|l| l == ".git"));
    let (_, stages) = dockerfile();
    for (from, sources, _) in stages.iter().flat_map(|s| &s.copies) {
        if from.is_some() {
            continue;
        }
        for source in sources {
            let top = source.split('/').next().unwrap();
            assert!(
                root().join(source).exists(),
                "{source} is in the repository"
            );
            for pattern in &ignored {
                let glob = glob::Pattern::new(pattern).unwrap();
                assert!(
                    !glob.matches(top) && !glob.matches(source),
                    ".dockerignore's {pattern:?} drops {source}, which the Dockerfile copies"
                );
            }
        }
    }
}

#[test]
fn container_config_validates() {
    validate_config(&root().join("config/container.yaml")).unwrap();
}

#[test]
fn container_config_is_the_default_with_listeners_on_all_interfaces() {
    let default = yaml("config/default.yaml");
    let container = yaml("config/container.yaml");
    assert_eq!(
        without(container.clone(), &LISTENERS),
        without(default, &LISTENERS),
        "config/container.yaml must be config/default.yaml with only the endpoints changed"
    );
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    for addr in [
        config.receivers.grpc.endpoint,
        config.receivers.http.endpoint,
        config.api.http.endpoint,
        config.api.grpc.endpoint,
    ] {
        assert!(addr.ip().is_unspecified(), "{addr} binds every interface");
    }
    // The four endpoints are written out, not left to the 127.0.0.1 defaults.
    for key in LISTENERS {
        let mut node = &container;
        for part in key.split('.') {
            node = node.get(part).unwrap_or_else(|| panic!("{key} is set"));
        }
        assert!(node.as_str().unwrap().starts_with("0.0.0.0:"), "{key}");
    }
}

// ---------------------------------------------------------------------------
// The Helm chart

/// Helm's values coalescing: maps merge key by key, anything else is
/// replaced, `null` removes the key.
fn coalesce(base: &mut Json, over: &Json) {
    match (base, over) {
        (Json::Object(b), Json::Object(o)) => {
            for (k, v) in o {
                if v.is_null() {
                    b.remove(k);
                } else if let Some(existing) = b.get_mut(k) {
                    coalesce(existing, v);
                } else {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn chart_values() -> Json {
    yaml(&format!("{CHART}/values.yaml"))
}

/// values.yaml with `overrides` (YAML documents) coalesced over it, in order.
fn values_with(overrides: &[&str]) -> Json {
    let mut values = chart_values();
    for o in overrides {
        let o: Json = serde_yaml_ng::from_str(o).unwrap();
        if !o.is_null() {
            coalesce(&mut values, &o);
        }
    }
    values
}

/// The `ci/*-values.yaml` files: (file name, content).
fn ci_values() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(root().join(CHART).join("ci"))
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
    files.sort();
    files
}

fn schema_validator() -> jsonschema::Validator {
    let schema: Json = serde_json::from_str(&read(&format!("{CHART}/values.schema.json"))).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn schema_errors(values: &Json) -> Vec<String> {
    schema_validator()
        .iter_errors(values)
        .map(|e| format!("at {}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn chart_yaml_files_parse() {
    let chart = yaml(&format!("{CHART}/Chart.yaml"));
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["name"], "toolscore");
    assert_eq!(chart["version"], "0.1.0");
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
    assert!(chart_values().is_object());
    let ci = ci_values();
    let names: Vec<&str> = ci.iter().map(|(n, _)| n.as_str()).collect();
    for needed in [
        "default-values.yaml",
        "multi-replica-values.yaml",
        "servicemonitor-values.yaml",
        "eval-sets-values.yaml",
    ] {
        assert!(names.contains(&needed), "ci/{needed}");
    }
    for (name, text) in &ci {
        let v: Json = serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("ci/{name}: {e}"));
        assert!(v.is_object(), "ci/{name}");
    }
}

#[test]
fn values_and_every_ci_values_file_validate_against_the_schema() {
    assert_eq!(
        schema_errors(&chart_values()),
        Vec::<String>::new(),
        "values.yaml"
    );
    for (name, text) in ci_values() {
        let errors = schema_errors(&values_with(&[&text]));
        assert!(errors.is_empty(), "ci/{name}: {errors:#?}");
    }
}

#[test]
fn the_schema_refuses_unknown_keys_and_bad_values() {
    // (values, where the error is, what it names)
    let bad = [
        ("unknownKey: 1", "", "unknownKey"),
        ("image: {tagg: v1}", "/image", "tagg"),
        ("image: {tag: latest}", "/image/tag", "latest"),
        ("ports: {http: 70000}", "/ports/http", "70000"),
        ("ports: {metrics: 9090}", "/ports", "metrics"),
        // Helm drops a key set to null: every key is required.
        ("resources: null", "", "resources"),
        (
            "resources: {requests: null, limits: null}",
            "/resources",
            "{}",
        ),
        (
            "serviceMonitor: {enabled: 'yes'}",
            "/serviceMonitor/enabled",
            "yes",
        ),
        (
            "serviceMonitor: {intervall: 30s}",
            "/serviceMonitor",
            "intervall",
        ),
        (
            "livenessProbe: {httpGet: {path: /}}",
            "/livenessProbe",
            "httpGet",
        ),
        ("evalSets: {weather.txt: '{}'}", "/evalSets", "weather.txt"),
        ("replicaCount: 0", "/replicaCount", "0"),
        (
            "podDisruptionBudget: {maxUnavailable: many}",
            "/podDisruptionBudget/maxUnavailable",
            "many",
        ),
        ("config: []", "/config", "[]"),
    ];
    for (doc, path, names) in bad {
        let errors = schema_errors(&values_with(&[doc]));
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(&format!("at {path}: ")) && e.contains(names)),
            "{doc:?} should fail at {path:?} naming {names:?}: {errors:#?}"
        );
    }
}

/// Every object schema with `properties` is closed, and its properties are
/// exactly the keys values.yaml gives (values.yaml documents every key).
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
            let in_schema: BTreeSet<&String> = props.keys().collect();
            let in_values: BTreeSet<&String> = values.keys().collect();
            assert_eq!(in_schema, in_values, "keys of {path}");
        }
        for (k, sub) in props {
            walk(sub, values.and_then(|v| v.get(k)), &format!("{path}.{k}"));
        }
    }
    let schema: Json = serde_json::from_str(&read(&format!("{CHART}/values.schema.json"))).unwrap();
    walk(&schema, Some(&chart_values()), "values");
}

/// Every `.Values.a.b` the templates read exists in values.yaml.
#[test]
fn every_values_reference_in_the_templates_exists_in_values_yaml() {
    let re = regex::Regex::new(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)").unwrap();
    let values = chart_values();
    let mut seen = 0;
    for (name, text) in helm::Chart::load(&root().join(CHART)).sources() {
        for m in re.captures_iter(&text) {
            let path = &m[1][1..];
            let mut node = &values;
            for part in path.split('.') {
                node = node
                    .get(part)
                    .unwrap_or_else(|| panic!("{name}: .Values.{path} is not in values.yaml"));
            }
            seen += 1;
        }
    }
    assert!(seen > 40, "only {seen} references found");
}

/// A Go-template renderer for the chart: `gtmpl` (Go's text/template in
/// Rust) plus the Sprig and Helm functions the chart uses. It is not Helm:
/// values are strict (a missing `.Values` key is an error, where Helm prints
/// nothing), numbers keep their YAML type (Helm's are float64), and map
/// iteration order is not sorted. The chart is written to render the same
/// under both (`int` before arithmetic and `%d`, no reliance on order).
mod helm {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use gtmpl::{Context, Func, FuncError, Template, Value};
    use serde_json::Value as Json;
    use sha2::{Digest, Sha256};

    thread_local! {
        /// The chart's named templates, for `include`.
        static HELPERS: RefCell<String> = const { RefCell::new(String::new()) };
    }

    pub struct Chart {
        pub meta: Json,
        helpers: String,
        templates: BTreeMap<String, String>,
    }

    impl Chart {
        pub fn load(dir: &Path) -> Chart {
            let meta: Json =
                serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join("Chart.yaml")).unwrap())
                    .unwrap();
            let mut helpers = String::new();
            let mut templates = BTreeMap::new();
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir.join("templates"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&path).unwrap();
                if name.starts_with('_') {
                    helpers.push_str(&text);
                } else {
                    templates.insert(name, text);
                }
            }
            Chart {
                meta,
                helpers,
                templates,
            }
        }

        /// Every template source, helpers included: (file name, text).
        pub fn sources(&self) -> Vec<(String, String)> {
            let mut v: Vec<(String, String)> = self
                .templates
                .iter()
                .map(|(k, t)| (k.clone(), t.clone()))
                .collect();
            v.push(("_helpers.tpl".into(), self.helpers.clone()));
            v
        }

        /// Renders every template: file name → text, or the first error.
        pub fn render(
            &self,
            values: &Json,
            release: &str,
            namespace: &str,
        ) -> Result<BTreeMap<String, String>, String> {
            HELPERS.with(|h| *h.borrow_mut() = self.helpers.clone());
            let m = |pairs: Vec<(&str, Value)>| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            };
            let ctx = m(vec![
                ("Values", to_value(values, true)),
                (
                    "Chart",
                    m(vec![
                        ("Name", to_value(&self.meta["name"], true)),
                        ("Version", to_value(&self.meta["version"], true)),
                        ("AppVersion", to_value(&self.meta["appVersion"], true)),
                    ]),
                ),
                (
                    "Release",
                    m(vec![
                        ("Name", Value::from(release)),
                        ("Namespace", Value::from(namespace)),
                        ("Service", Value::from("Helm")),
                        ("IsInstall", Value::Bool(true)),
                        ("IsUpgrade", Value::Bool(false)),
                        ("Revision", Value::from(1u64)),
                    ]),
                ),
            ]);
            let mut out = BTreeMap::new();
            for (name, text) in &self.templates {
                let mut t = template();
                t.add_template("_helpers.tpl", self.helpers.clone())
                    .map_err(|e| format!("_helpers.tpl: {e}"))?;
                t.parse(text.clone()).map_err(|e| format!("{name}: {e}"))?;
                let rendered = t
                    .render(&Context::from(ctx.clone()))
                    .map_err(|e| format!("{name}: {e}"))?;
                out.insert(name.clone(), rendered);
            }
            Ok(out)
        }
    }

    fn template() -> Template {
        let mut t = Template::default();
        let funcs: &[(&str, Func)] = &[
            ("include", include),
            ("dict", dict),
            ("list", list),
            ("ternary", ternary),
            ("empty", empty),
            ("default", default),
            ("deepCopy", deep_copy),
            ("mustMergeOverwrite", merge_overwrite),
            ("toYaml", to_yaml),
            ("toJson", to_json_fn),
            ("toPrettyJson", to_pretty_json),
            ("nindent", nindent),
            ("indent", indent),
            ("quote", quote),
            ("trunc", trunc),
            ("trimSuffix", trim_suffix),
            ("replace", replace),
            ("contains", contains),
            ("sha256sum", sha256sum),
            ("int", int),
            ("mul", mul),
            ("toString", to_string),
            ("kindIs", kind_is),
            ("hasKey", has_key),
            ("get", get),
            ("fail", fail),
        ];
        t.add_funcs(funcs);
        t
    }

    /// YAML values → template values; `strict` maps fail on a missing key.
    pub fn to_value(v: &Json, strict: bool) -> Value {
        match v {
            Json::Null => Value::Nil,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Value::from(i),
                (_, Some(u)) => Value::from(u),
                _ => Value::from(n.as_f64().unwrap()),
            },
            Json::String(s) => Value::String(s.clone()),
            Json::Array(a) => Value::Array(a.iter().map(|x| to_value(x, strict)).collect()),
            Json::Object(o) => {
                let m = o
                    .iter()
                    .map(|(k, v)| (k.clone(), to_value(v, strict)))
                    .collect();
                if strict {
                    Value::Object(m)
                } else {
                    Value::Map(m)
                }
            }
        }
    }

    /// Template values → JSON, map keys sorted (as Go's encoders sort them).
    pub fn to_json(v: &Value) -> Json {
        match v {
            Value::NoValue | Value::Nil | Value::Function(_) => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::String(s) => Json::String(s.clone()),
            Value::Number(n) => n
                .as_i64()
                .map(Json::from)
                .or_else(|| n.as_u64().map(Json::from))
                .unwrap_or_else(|| Json::from(n.as_f64().unwrap_or(0.0))),
            Value::Array(a) => Json::Array(a.iter().map(to_json).collect()),
            Value::Object(m) | Value::Map(m) => {
                let sorted: BTreeMap<&String, Json> =
                    m.iter().map(|(k, v)| (k, to_json(v))).collect();
                Json::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
        }
    }

    fn err(msg: impl Into<String>) -> FuncError {
        FuncError::Generic(msg.into())
    }

    fn arg<'a>(args: &'a [Value], i: usize, f: &str) -> Result<&'a Value, FuncError> {
        args.get(i)
            .ok_or_else(|| FuncError::AtLeastXArgs(f.into(), i + 1))
    }

    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::NoValue | Value::Nil => String::new(),
            other => other.to_string(),
        }
    }

    fn number(v: &Value) -> i64 {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_u64().map(|u| u as i64))
                .or_else(|| n.as_f64().map(|f| f as i64))
                .unwrap_or(0),
            Value::String(s) => s.parse().unwrap_or(0),
            Value::Bool(b) => i64::from(*b),
            _ => 0,
        }
    }

    fn truthy(v: &Value) -> bool {
        match v {
            Value::NoValue | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Number(_) => number(v) != 0 || v.to_string() != "0",
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) | Value::Map(m) => !m.is_empty(),
            Value::Function(_) => true,
        }
    }

    fn include(args: &[Value]) -> Result<Value, FuncError> {
        let name = text(arg(args, 0, "include")?);
        let dot = args.get(1).cloned().unwrap_or(Value::Nil);
        let helpers = HELPERS.with(|h| h.borrow().clone());
        let mut t = template();
        t.add_template("_helpers.tpl", helpers)
            .map_err(|e| err(e.to_string()))?;
        t.parse(format!("{{{{ template {name:?} . }}}}"))
            .map_err(|e| err(e.to_string()))?;
        t.render(&Context::from(dot))
            .map(Value::from)
            .map_err(|e| err(format!("include {name:?}: {e}")))
    }

    fn dict(args: &[Value]) -> Result<Value, FuncError> {
        let mut m = std::collections::HashMap::new();
        for pair in args.chunks(2) {
            m.insert(text(&pair[0]), pair.get(1).cloned().unwrap_or(Value::Nil));
        }
        Ok(Value::Map(m))
    }

    fn list(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::Array(args.to_vec()))
    }

    fn ternary(args: &[Value]) -> Result<Value, FuncError> {
        let cond = truthy(arg(args, 2, "ternary")?);
        Ok(args[if cond { 0 } else { 1 }].clone())
    }

    fn empty(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::Bool(!truthy(arg(args, 0, "empty")?)))
    }

    fn default(args: &[Value]) -> Result<Value, FuncError> {
        let fallback = arg(args, 0, "default")?;
        Ok(match args.get(1) {
            Some(v) if truthy(v) => v.clone(),
            _ => fallback.clone(),
        })
    }

    fn deep_copy(args: &[Value]) -> Result<Value, FuncError> {
        Ok(to_value(&to_json(arg(args, 0, "deepCopy")?), false))
    }

    fn merge_json(dst: &mut Json, src: &Json) {
        match (dst, src) {
            (Json::Object(d), Json::Object(s)) => {
                for (k, v) in s {
                    match d.get_mut(k) {
                        Some(existing) if existing.is_object() && v.is_object() => {
                            merge_json(existing, v)
                        }
                        _ => {
                            d.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (d, s) => *d = s.clone(),
        }
    }

    fn merge_overwrite(args: &[Value]) -> Result<Value, FuncError> {
        let mut dst = to_json(arg(args, 0, "mustMergeOverwrite")?);
        for src in &args[1..] {
            merge_json(&mut dst, &to_json(src));
        }
        Ok(to_value(&dst, false))
    }

    fn to_yaml(args: &[Value]) -> Result<Value, FuncError> {
        let v = to_json(arg(args, 0, "toYaml")?);
        let s = serde_yaml_ng::to_string(&v).map_err(|e| err(e.to_string()))?;
        Ok(Value::from(s.trim_end_matches('\n')))
    }

    fn to_json_fn(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(to_json(arg(args, 0, "toJson")?).to_string()))
    }

    fn to_pretty_json(args: &[Value]) -> Result<Value, FuncError> {
        let v = to_json(arg(args, 0, "toPrettyJson")?);
        serde_json::to_string_pretty(&v)
            .map(Value::from)
            .map_err(|e| err(e.to_string()))
    }

    fn pad(n: &Value, s: &Value) -> String {
        let pad = " ".repeat(usize::try_from(number(n)).unwrap_or(0));
        format!("{pad}{}", text(s).replace('\n', &format!("\n{pad}")))
    }

    fn nindent(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(format!(
            "\n{}",
            pad(arg(args, 0, "nindent")?, arg(args, 1, "nindent")?)
        )))
    }

    fn indent(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(pad(
            arg(args, 0, "indent")?,
            arg(args, 1, "indent")?,
        )))
    }

    fn quote(args: &[Value]) -> Result<Value, FuncError> {
        let quoted: Vec<String> = args
            .iter()
            .map(|a| Json::String(text(a)).to_string())
            .collect();
        Ok(Value::from(quoted.join(" ")))
    }

    fn trunc(args: &[Value]) -> Result<Value, FuncError> {
        let n = usize::try_from(number(arg(args, 0, "trunc")?)).unwrap_or(0);
        Ok(Value::from(
            text(arg(args, 1, "trunc")?)
                .chars()
                .take(n)
                .collect::<String>(),
        ))
    }

    fn trim_suffix(args: &[Value]) -> Result<Value, FuncError> {
        let suffix = text(arg(args, 0, "trimSuffix")?);
        let s = text(arg(args, 1, "trimSuffix")?);
        Ok(Value::from(s.strip_suffix(&suffix).unwrap_or(&s)))
    }

    fn replace(args: &[Value]) -> Result<Value, FuncError> {
        let (old, new) = (
            text(arg(args, 0, "replace")?),
            text(arg(args, 1, "replace")?),
        );
        Ok(Value::from(
            text(arg(args, 2, "replace")?).replace(&old, &new),
        ))
    }

    fn contains(args: &[Value]) -> Result<Value, FuncError> {
        let needle = text(arg(args, 0, "contains")?);
        Ok(Value::Bool(
            text(arg(args, 1, "contains")?).contains(&needle),
        ))
    }

    fn sha256sum(args: &[Value]) -> Result<Value, FuncError> {
        let digest = Sha256::digest(text(arg(args, 0, "sha256sum")?).as_bytes());
        Ok(Value::from(const_hex::encode(digest)))
    }

    fn int(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(number(arg(args, 0, "int")?)))
    }

    fn mul(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(args.iter().map(number).product::<i64>()))
    }

    fn to_string(args: &[Value]) -> Result<Value, FuncError> {
        Ok(Value::from(text(arg(args, 0, "toString")?)))
    }

    fn kind_is(args: &[Value]) -> Result<Value, FuncError> {
        let kind = text(arg(args, 0, "kindIs")?);
        let actual = match arg(args, 1, "kindIs")? {
            Value::String(_) => "string",
            Value::Bool(_) => "bool",
            Value::Number(_) => "float64",
            Value::Array(_) => "slice",
            Value::Object(_) | Value::Map(_) => "map",
            Value::NoValue | Value::Nil => "invalid",
            Value::Function(_) => "func",
        };
        Ok(Value::Bool(kind == actual))
    }

    fn map_of(v: &Value) -> Option<&std::collections::HashMap<String, Value>> {
        match v {
            Value::Object(m) | Value::Map(m) => Some(m),
            _ => None,
        }
    }

    fn has_key(args: &[Value]) -> Result<Value, FuncError> {
        let key = text(arg(args, 1, "hasKey")?);
        Ok(Value::Bool(
            map_of(&args[0]).is_some_and(|m| m.contains_key(&key)),
        ))
    }

    fn get(args: &[Value]) -> Result<Value, FuncError> {
        let key = text(arg(args, 1, "get")?);
        Ok(map_of(&args[0])
            .and_then(|m| m.get(&key).cloned())
            .unwrap_or_else(|| Value::from("")))
    }

    fn fail(args: &[Value]) -> Result<Value, FuncError> {
        Err(err(text(arg(args, 0, "fail")?)))
    }

    /// A map of rendered YAML documents, parsed; empty documents dropped.
    pub fn documents(rendered: &BTreeMap<String, String>) -> Vec<(String, Json)> {
        let mut docs = Vec::new();
        for (name, text) in rendered {
            if !name.ends_with(".yaml") {
                continue;
            }
            for doc in serde_yaml_ng::Deserializer::from_str(text) {
                let v = serde::Deserialize::deserialize(doc)
                    .unwrap_or_else(|e| panic!("{name} does not parse as YAML: {e}\n{text}"));
                if !matches!(v, Json::Null) {
                    docs.push((name.clone(), v));
                }
            }
        }
        docs
    }
}

fn chart() -> helm::Chart {
    helm::Chart::load(&root().join(CHART))
}

/// Renders the chart with values.yaml plus `overrides`, as Helm would with
/// `-f`; panics on a render error.
fn render(overrides: &[&str]) -> (BTreeMap<String, String>, Vec<Json>) {
    let values = values_with(overrides);
    let errors = schema_errors(&values);
    assert!(
        errors.is_empty(),
        "values refused by the schema: {errors:#?}"
    );
    let rendered = chart()
        .render(&values, RELEASE, NAMESPACE)
        .unwrap_or_else(|e| panic!("render: {e}"));
    let docs = helm::documents(&rendered)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    (rendered, docs)
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

/// The objects hang together as the API server and kubelet would need:
/// apiVersions, names, selectors, named ports, mounted ConfigMaps.
fn check_objects(docs: &[Json]) {
    let dns_label = regex::Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").unwrap();
    for d in docs {
        let kind = d["kind"].as_str().expect("kind");
        let api = d["apiVersion"].as_str().expect("apiVersion");
        let expected = match kind {
            "Deployment" | "StatefulSet" => "apps/v1",
            "Service" | "ConfigMap" | "ServiceAccount" => "v1",
            "PodDisruptionBudget" => "policy/v1",
            "ServiceMonitor" => "monitoring.coreos.com/v1",
            other => panic!("unexpected kind {other}"),
        };
        assert_eq!(api, expected, "{kind}");
        let name = d["metadata"]["name"].as_str().expect("metadata.name");
        assert!(
            dns_label.is_match(name) && name.len() <= 63,
            "{kind} {name}"
        );
        assert_eq!(d["metadata"]["namespace"], NAMESPACE, "{kind} {name}");
        for (k, v) in d["metadata"]["labels"].as_object().expect("labels") {
            assert!(v.is_string(), "{kind} {name}: label {k} is not a string");
        }
        if kind == "ConfigMap" {
            for (k, v) in d["data"].as_object().unwrap() {
                assert!(v.is_string(), "ConfigMap {name}: {k} is not a string");
            }
        }
    }

    let w = workload(docs);
    let pod = &w["spec"]["template"];
    let pod_labels = pod["metadata"]["labels"].as_object().unwrap();
    let selects_pods = |selector: &Json| {
        let sel = selector.as_object().unwrap();
        assert!(!sel.is_empty());
        sel.iter().all(|(k, v)| pod_labels.get(k) == Some(v))
    };
    assert!(selects_pods(&w["spec"]["selector"]["matchLabels"]));
    let container = &pod["spec"]["containers"][0];
    let port_names: BTreeSet<&str> = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let n = p["name"].as_str().unwrap();
            assert!(n.len() <= 15, "port name {n} longer than 15");
            n
        })
        .collect();
    for d in docs.iter().filter(|d| d["kind"] == "Service") {
        assert!(selects_pods(&d["spec"]["selector"]));
        for p in d["spec"]["ports"].as_array().unwrap() {
            let target = p["targetPort"].as_str().unwrap();
            assert!(port_names.contains(target), "Service port {target}");
        }
    }
    for d in docs.iter().filter(|d| d["kind"] == "PodDisruptionBudget") {
        assert!(selects_pods(&d["spec"]["selector"]["matchLabels"]));
    }
    for v in pod["spec"]["volumes"].as_array().unwrap() {
        if let Some(cm) = v["configMap"]["name"].as_str() {
            assert!(find(docs, "ConfigMap", cm).is_some(), "volume {cm}");
        }
    }
    for m in container["volumeMounts"].as_array().unwrap() {
        let vol = m["name"].as_str().unwrap();
        assert!(
            pod["spec"]["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["name"] == vol),
            "mount of volume {vol}"
        );
    }
    if let Some(sa) = docs.iter().find(|d| d["kind"] == "ServiceAccount") {
        assert_eq!(pod["spec"]["serviceAccountName"], sa["metadata"]["name"]);
    }
}

/// Writes the rendered config and the mounted files as the pod sees them
/// (config.yaml, evaluators/, eval-sets/), and returns the config's path.
fn write_pod_files(docs: &[Json], dir: &Path) -> PathBuf {
    let w = workload(docs);
    let pod = &w["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[..2], ["serve", "--config"]);
    let config_path = Path::new(args[2]);
    let base = config_path.parent().unwrap();
    for mount in container["volumeMounts"].as_array().unwrap() {
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap();
        let cm = find(
            docs,
            "ConfigMap",
            volume["configMap"]["name"].as_str().unwrap(),
        )
        .unwrap();
        let mount_path = Path::new(mount["mountPath"].as_str().unwrap());
        let rel = mount_path
            .strip_prefix(base)
            .unwrap_or_else(|_| panic!("{} is outside {}", mount_path.display(), base.display()));
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
    dir.join(config_path.strip_prefix(base).unwrap())
}

fn checksum(docs: &[Json]) -> String {
    workload(docs)["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        .as_str()
        .expect("checksum/config annotation")
        .to_owned()
}

#[test]
fn the_chart_renders_with_its_defaults_and_every_ci_values_file() {
    let mut sets = vec![("values.yaml".to_owned(), String::new())];
    sets.extend(ci_values());
    for (name, text) in sets {
        let (rendered, docs) = render(&[&text]);
        check_objects(&docs);
        assert!(
            rendered["NOTES.txt"]
                .contains(&format!("{RELEASE}.{NAMESPACE}.svc.cluster.local:4317")),
            "{name}: NOTES.txt"
        );

        // The config toolscore will run: valid, and binding what the pod exposes.
        let dir = tempfile::tempdir().unwrap();
        let config_file = write_pod_files(&docs, dir.path());
        let config_yaml: Json =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
        validate_or_skip(&config_file, &config_yaml);
        let without_exporter = without(config_yaml.clone(), &["exporter"]);
        let text = serde_yaml_ng::to_string(&without_exporter).unwrap();
        let config = Config::parse(&text, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let container = &workload(&docs)["spec"]["template"]["spec"]["containers"][0];
        let container_ports: BTreeSet<u16> = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["containerPort"].as_u64().unwrap() as u16)
            .collect();
        assert_eq!(bound_ports(&config), container_ports, "{name}");
        for addr in [config.receivers.grpc.endpoint, config.api.http.endpoint] {
            assert!(addr.ip().is_unspecified(), "{name}: {addr}");
        }
    }
}

#[test]
fn the_default_render_is_one_deployment_probed_on_the_api_port() {
    let (_, docs) = render(&[]);
    assert_eq!(
        kinds(&docs),
        [
            "ConfigMap",
            "Deployment",
            "Service",
            "Service",
            "ServiceAccount"
        ]
    );
    let w = find(&docs, "Deployment", RELEASE).unwrap();
    assert_eq!(w["spec"]["replicas"], 1);
    let pod = &w["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(
        c["image"],
        format!("toolscore:{}", env!("CARGO_PKG_VERSION"))
    );
    let http_port = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "http")
        .unwrap();
    assert_eq!(http_port["containerPort"], 8080);
    assert_eq!(
        c["livenessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": "http"})
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": "http"})
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

    // The grace period covers toolscore's drain deadline.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    let shutdown_ms = chart_values()["config"]["shutdown_timeout_ms"]
        .as_u64()
        .unwrap_or(20_000);
    assert!(grace * 1000 > shutdown_ms, "{grace} s vs {shutdown_ms} ms");

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
    assert!(
        find(&docs, "ServiceMonitor", RELEASE).is_none(),
        "off by default"
    );
    assert!(find(&docs, "PodDisruptionBudget", RELEASE).is_none());
}

#[test]
fn several_replicas_render_a_statefulset_behind_the_headless_service_with_a_pdb() {
    let (_, docs) = render(&[&read(&format!("{CHART}/ci/multi-replica-values.yaml"))]);
    assert!(docs.iter().all(|d| d["kind"] != "Deployment"));
    let sts = find(&docs, "StatefulSet", RELEASE).unwrap();
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(sts["spec"]["serviceName"], format!("{RELEASE}-headless"));
    assert!(find(&docs, "Service", &format!("{RELEASE}-headless")).is_some());
    let pdb = find(&docs, "PodDisruptionBudget", RELEASE).unwrap();
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert!(pdb["spec"].get("minAvailable").is_none());
    // The override of shutdown_timeout_ms reached the config, with a grace period above it.
    let cm = find(&docs, "ConfigMap", RELEASE).unwrap();
    let config: Json =
        serde_yaml_ng::from_str(cm["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(config["shutdown_timeout_ms"], 25_000);
    assert_eq!(config["assembler"]["grace_after_root_ms"], 2000);
    assert_eq!(
        config["assembler"]["on_timeout"], "evaluate",
        "merged, not replaced"
    );
    assert_eq!(
        sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        40
    );

    let (_, docs) =
        render(&["replicaCount: 2\npodDisruptionBudget: {enabled: true, minAvailable: 1}"]);
    let pdb = find(&docs, "PodDisruptionBudget", RELEASE).unwrap();
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(pdb["spec"].get("maxUnavailable").is_none());
}

#[test]
fn the_servicemonitor_scrapes_metrics_on_the_api_port_when_enabled() {
    let (_, docs) = render(&[&read(&format!("{CHART}/ci/servicemonitor-values.yaml"))]);
    let sm = find(&docs, "ServiceMonitor", RELEASE).unwrap();
    assert_eq!(sm["metadata"]["labels"]["release"], "prometheus");
    let endpoint = &sm["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "http");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["interval"], "15s");
    // It selects the Service that has the `http` port.
    let svc = find(&docs, "Service", RELEASE).unwrap();
    let labels = svc["metadata"]["labels"].as_object().unwrap();
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(labels.get(k), Some(v));
    }
}

#[test]
fn eval_set_and_evaluator_files_are_mounted_where_the_config_globs_look() {
    let (_, docs) = render(&[&read(&format!("{CHART}/ci/eval-sets-values.yaml"))]);
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
    let cm = find(&docs, "ConfigMap", RELEASE).unwrap();
    let config: Json =
        serde_yaml_ng::from_str(cm["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(config["evaluators"]["files"], json!(["evaluators/*.json"]));
    assert_eq!(config["eval_sets"]["files"], json!(["eval-sets/*.json"]));
    assert_eq!(config["evaluators"]["inline"], json!([]));

    // Loaded by toolscore from where the pod mounts them.
    let dir = tempfile::tempdir().unwrap();
    let file = write_pod_files(&docs, dir.path());
    let loaded = toolscore::app::load_config(Some(&file)).unwrap();
    let binder = toolscore::evaluator::stage::Binder::load(&loaded.0, loaded.1.as_deref()).unwrap();
    drop(binder);
    assert!(dir.path().join("eval-sets/weather.json").exists());

    // Without files there are no globs, mounts or ConfigMaps.
    let (_, docs) = render(&[]);
    let cm = find(&docs, "ConfigMap", RELEASE).unwrap();
    let config: Json =
        serde_yaml_ng::from_str(cm["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert!(config.get("eval_sets").is_none());
    assert!(config["evaluators"].get("files").is_none());
    assert_eq!(docs.iter().filter(|d| d["kind"] == "ConfigMap").count(), 1);
}

#[test]
fn the_chart_owns_the_listeners() {
    let (_, docs) = render(&[
        "ports: {otlpGrpc: 14317}\nconfig: {receivers: {grpc: {endpoint: 127.0.0.1:9999}}, api: {http: {enabled: true}}}",
    ]);
    let cm = find(&docs, "ConfigMap", RELEASE).unwrap();
    let config: Json =
        serde_yaml_ng::from_str(cm["data"]["config.yaml"].as_str().unwrap()).unwrap();
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
    let base = checksum(&render(&[]).1);
    assert_eq!(base.len(), 64);
    assert_eq!(base, checksum(&render(&[]).1), "deterministic");
    assert_eq!(base, checksum(&render(&["replicaCount: 1"]).1));
    assert_ne!(
        base,
        checksum(&render(&["config: {store: {max_traces: 10}}"]).1)
    );
    assert_ne!(base, checksum(&render(&["ports: {http: 9080}"]).1));
    // A file's content alone (the config, with its globs, stays the same).
    let one = checksum(&render(&["evaluators: {a.json: '{\"id\": 1}'}"]).1);
    assert_ne!(
        one,
        checksum(&render(&["evaluators: {a.json: '{\"id\": 2}'}"]).1)
    );
    let one = checksum(&render(&["evalSets: {a.json: '{\"id\": 1}'}"]).1);
    assert_ne!(
        one,
        checksum(&render(&["evalSets: {a.json: '{\"id\": 2}'}"]).1)
    );
}

#[test]
fn the_chart_refuses_a_grace_period_within_the_drain_deadline() {
    for values in [
        "terminationGracePeriodSeconds: 20",
        "config: {shutdown_timeout_ms: 45000}",
    ] {
        let err = chart()
            .render(&values_with(&[values]), RELEASE, NAMESPACE)
            .expect_err(values);
        assert!(
            err.contains("terminationGracePeriodSeconds"),
            "{values}: {err}"
        );
    }
    chart()
        .render(
            &values_with(&["config: {shutdown_timeout_ms: 29999}"]),
            RELEASE,
            NAMESPACE,
        )
        .unwrap();
}

#[test]
fn the_renderer_fails_on_a_missing_value_and_an_unknown_function() {
    // What makes the render checks able to fail: a typo in a template.
    let c = chart();
    let mut values = chart_values();
    values.as_object_mut().unwrap().remove("ports");
    let err = c.render(&values, RELEASE, NAMESPACE).unwrap_err();
    assert!(err.contains("ports"), "{err}");
    let mut t = gtmpl::Template::default();
    assert!(t.parse("{{ lookup \"v1\" }}").is_err());
}

// ---------------------------------------------------------------------------
// Collector configs and docker-compose

fn component_type(id: &str) -> &str {
    id.split('/').next().unwrap()
}

fn names(v: &Json) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not a list"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// Every pipeline uses defined components, every defined component is used,
/// and memory_limiter comes first.
fn check_collector(file: &str) -> Json {
    let c = yaml(file);
    let pipelines = c["service"]["pipelines"].as_object().expect("pipelines");
    assert!(!pipelines.is_empty(), "{file}");
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (id, p) in pipelines {
        assert!(
            ["traces", "metrics", "logs"].contains(&component_type(id)),
            "{file}: pipeline {id}"
        );
        for section in ["receivers", "processors", "exporters"] {
            let list = names(&p[section]);
            if section != "processors" {
                assert!(!list.is_empty(), "{file}: {id}.{section}");
            }
            for name in list {
                assert!(
                    c[section].get(&name).is_some(),
                    "{file}: pipeline {id} uses {section} {name}, which is not defined"
                );
                used.entry(section).or_default().insert(name);
            }
        }
        assert_eq!(
            names(&p["processors"]).first().map(String::as_str),
            Some("memory_limiter"),
            "{file}: {id}"
        );
        assert!(
            names(&p["processors"]).contains(&"batch".to_owned()),
            "{file}: {id}"
        );
    }
    for section in ["receivers", "processors", "exporters"] {
        for defined in c[section].as_object().unwrap().keys() {
            assert!(
                used.get(section).is_some_and(|u| u.contains(defined)),
                "{file}: {section} {defined} is defined but unused"
            );
        }
    }
    c
}

/// Pipelines exporting to `exporter`.
fn pipelines_to<'a>(c: &'a Json, exporter: &str) -> Vec<(&'a String, &'a Json)> {
    c["service"]["pipelines"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, p)| names(&p["exporters"]).iter().any(|e| e == exporter))
        .collect()
}

/// The pipeline to toolscore drops toolscore's own spans (results, self
/// telemetry), which would come back as late spans of the traces they score.
fn check_results_stay_out(c: &Json, file: &str, exporter: &str) {
    let to_toolscore = pipelines_to(c, exporter);
    assert!(
        !to_toolscore.is_empty(),
        "{file}: nothing goes to {exporter}"
    );
    for (id, p) in to_toolscore {
        assert!(
            id.starts_with("traces"),
            "{file}: {id} sends {exporter} non-traces"
        );
        let filter = names(&p["processors"])
            .into_iter()
            .find(|n| component_type(n) == "filter")
            .unwrap_or_else(|| panic!("{file}: {id} has no filter processor"));
        let conditions = names(&c["processors"][&filter]["traces"]["span"]);
        assert!(
            conditions
                .iter()
                .any(|s| s.contains("resource.attributes[\"service.name\"] == \"toolscore\"")),
            "{file}: {filter} does not drop service.name toolscore: {conditions:?}"
        );
    }
}

#[test]
fn gateway_sends_agents_traces_to_toolscore_and_everything_to_the_backend() {
    let file = "deploy/collector/gateway.yaml";
    let c = check_collector(file);
    assert_eq!(
        c["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"],
        "0.0.0.0:4317"
    );
    assert_eq!(
        c["receivers"]["otlp"]["protocols"]["http"]["endpoint"],
        "0.0.0.0:4318"
    );
    let toolscore = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, e)| e["endpoint"] == "toolscore:4317")
        .map(|(id, _)| id.clone())
        .expect("an exporter to toolscore:4317");
    assert_eq!(component_type(&toolscore), "otlp_grpc");
    let jaeger = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, e)| e["endpoint"] == "jaeger:4317")
        .map(|(id, _)| id.clone())
        .expect("an exporter to jaeger:4317");
    check_results_stay_out(&c, file, &toolscore);
    // The backend gets every trace: a pipeline without the filter.
    let to_backend = pipelines_to(&c, &jaeger);
    assert!(to_backend.iter().any(|(id, p)| {
        id.starts_with("traces")
            && !names(&p["processors"])
                .iter()
                .any(|n| component_type(n) == "filter")
    }));
    // Result log events and metrics come back in too.
    for signal in ["logs", "metrics"] {
        let p = &c["service"]["pipelines"][signal];
        assert_eq!(names(&p["receivers"]), ["otlp"], "{signal}");
    }
    // Pointing at the port toolscore's container config binds.
    let config = Config::load(&root().join("config/container.yaml")).unwrap();
    assert_eq!(config.receivers.grpc.endpoint.port(), 4317);
}

#[test]
fn loadbalancing_routes_by_trace_id_to_the_charts_headless_service() {
    let file = "deploy/collector/loadbalancing.yaml";
    let c = check_collector(file);
    let (id, lb) = c["exporters"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(id, _)| component_type(id) == "loadbalancing")
        .expect("a loadbalancing exporter");
    assert_eq!(lb["routing_key"], "traceID");
    assert!(lb["protocol"]["otlp"].is_object());
    let dns = &lb["resolver"]["dns"];
    assert_eq!(dns["port"], 4317);
    // The name the chart gives the headless Service, in its namespace.
    let (_, docs) = render(&[]);
    let headless = docs
        .iter()
        .find(|d| d["kind"] == "Service" && d["spec"]["clusterIP"] == "None")
        .unwrap();
    assert_eq!(
        dns["hostname"],
        format!(
            "{}.{NAMESPACE}.svc.cluster.local",
            headless["metadata"]["name"].as_str().unwrap()
        )
    );
    assert!(
        headless["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == dns["port"])
    );
    check_results_stay_out(&c, file, id);
}

#[test]
fn compose_runs_the_collector_toolscore_and_jaeger() {
    let compose = yaml("deploy/collector/docker-compose.yaml");
    let services = compose["services"].as_object().unwrap();
    let mut service_names: Vec<&str> = services.keys().map(String::as_str).collect();
    service_names.sort();
    assert_eq!(service_names, ["jaeger", "otel-collector", "toolscore"]);
    let dir = root().join("deploy/collector");

    // Images pinned.
    for (name, s) in services {
        let image = s["image"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: image"));
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
        assert!(!tag.is_empty() && tag != "latest", "{name}: {image}");
    }

    // The collector runs gateway.yaml, and toolscore is built from the Dockerfile.
    let collector = &services["otel-collector"];
    assert!(
        collector["image"]
            .as_str()
            .unwrap()
            .contains("opentelemetry-collector-contrib")
    );
    let config_arg = names(&collector["command"])
        .into_iter()
        .find_map(|a| a.strip_prefix("--config=").map(str::to_owned))
        .unwrap();
    let mounts = |s: &Json| -> Vec<(String, String)> {
        names(&s["volumes"])
            .iter()
            .map(|v| {
                let parts: Vec<&str> = v.split(':').collect();
                (parts[0].to_owned(), parts[1].to_owned())
            })
            .collect()
    };
    let mounted = mounts(collector);
    let gateway = mounted
        .iter()
        .find(|(_, target)| *target == config_arg)
        .unwrap();
    assert_eq!(gateway.0, "./gateway.yaml");
    let ports = names(&collector["ports"]);
    assert!(ports.contains(&"4317:4317".to_owned()) && ports.contains(&"4318:4318".to_owned()));

    let toolscore = &services["toolscore"];
    let context = dir.join(toolscore["build"]["context"].as_str().unwrap());
    let dockerfile = toolscore["build"]["dockerfile"].as_str().unwrap();
    assert!(context.join(dockerfile).exists());
    assert!(context.join("Cargo.toml").exists());
    let command = names(&toolscore["command"]);
    assert_eq!(command[..2], ["serve", "--config"]);
    let config = mounts(toolscore)
        .into_iter()
        .find(|(_, target)| *target == command[2])
        .expect("toolscore's config is mounted");
    let config_file = dir.join(&config.0);
    assert!(config_file.exists());
    let ports = names(&toolscore["ports"]);
    assert!(ports.contains(&"8080:8080".to_owned()) && ports.contains(&"8081:8081".to_owned()));

    // Host names: the gateway's exporters name compose services, and
    // toolscore exports to the collector.
    let gateway = yaml("deploy/collector/gateway.yaml");
    for e in gateway["exporters"].as_object().unwrap().values() {
        if let Some(endpoint) = e["endpoint"].as_str() {
            let host = endpoint.split(':').next().unwrap();
            assert!(
                services.contains_key(host),
                "{endpoint} is no compose service"
            );
        }
    }
    let toolscore_config = yaml("deploy/collector/toolscore.yaml");
    assert_eq!(
        toolscore_config["exporter"]["endpoint"],
        "http://otel-collector:4317"
    );
    assert_eq!(toolscore_config["exporter"]["enabled"], true);
    // The same listeners as the image's config.
    assert_eq!(
        without(toolscore_config.clone(), &["exporter", "telemetry"]),
        without(yaml("config/container.yaml"), &[]),
        "deploy/collector/toolscore.yaml is config/container.yaml plus exporter and telemetry"
    );
    validate_or_skip(&config_file, &toolscore_config);
    assert!(services["jaeger"]["ports"].to_string().contains("16686"));
}
