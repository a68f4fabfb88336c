//! The deployment files, checked with the real tools, which
//! `.ci/deploy-tools/install.sh` installs into `target/tmp/deploy-tools`
//! (the first test to need them runs it; see [`tools`]):
//! - [`docker`]: the Dockerfile, parsed, against `config/container.yaml`;
//!   `hadolint`; its build stage replayed in a copy of the build context
//!   (`.dockerignore` applied), with `cargo fetch --locked` for its builds;
//! - [`chart`]: the Helm chart with Helm 3 and Helm 4 (`lint --strict`,
//!   `template`, NOTES, schema refusals, `kubeVersion`, use as a subchart),
//!   every rendered object against the Kubernetes schemas of the oldest and
//!   newest bundled version (`kubernetes-validate --strict`) and the
//!   ServiceMonitor against the prometheus-operator CRD schema, each rendered
//!   config through `toolscore validate-config`, and the objects' consistency
//!   (selectors, ports, probes, mounts, grace period, memory);
//! - [`collector`]: the Collector configs' structure and `docker-compose
//!   config` on the Compose file.
//!
//! Not checked here (no such thing runs on these machines): `docker build`
//! with an engine, a Kubernetes API server, a running Collector.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chart;
mod collector;
mod docker;
mod tools;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use toolscore::config::Config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(rel: &str) -> Json {
    serde_saphyr::from_str_with_options(&read(rel), toolscore::config::yaml_options())
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
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
